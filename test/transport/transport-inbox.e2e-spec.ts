import type { INestMicroservice } from '@nestjs/common';
import { TestBroker, uniqueName } from '../support/broker.js';
import { dropTables, pgKind, sql, uniqueTable, type OutboxKind } from '../support/outbox.js';
import { cleanUp } from '../support/suite.js';
import { patternTiers, sendTwiceAndFailOnce, startRetryMicroservice } from './transport-app.js';

describe('the transport with an inbox', () => {
  let broker: TestBroker;
  let kind: OutboxKind;
  let app: INestMicroservice | undefined;
  const queue = uniqueName('e2e.transport.inbox');
  const table = uniqueTable('e2e_transport_inbox');

  beforeAll(async () => {
    broker = await TestBroker.connect();
    kind = await pgKind();
  });
  afterAll(async () => {
    await cleanUp(
      () => app?.close(),
      () => dropTables(table),
      () => kind?.close(),
      () => broker?.deleteRetryTopology(queue, { queues: patternTiers(queue) }),
      () => broker?.close(),
    );
  });

  it("records each event in the server's inbox: a second copy is acked without a call, a failure rolls back and retries", async () => {
    app = await startRetryMicroservice({ queue, inbox: { adapter: kind.adapter, table } });
    const calls = await sendTwiceAndFailOnce(app, broker, queue);
    expect(calls.filter((c) => c.pattern === 'order.paid').map((c) => c.data)).toEqual([{ id: 1 }]);
    expect(calls.filter((c) => c.pattern === 'order.created').map((c) => c.attempt)).toEqual([1, 2]);
    // The failed attempt's record rolled back with it; the retry's committed.
    expect((await sql(`SELECT message_id FROM "${table}" ORDER BY message_id`)).map((r) => r.message_id)).toEqual(['failing-once', 'same-id']);
  });
});
