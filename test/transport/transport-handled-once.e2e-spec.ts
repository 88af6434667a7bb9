import type { INestMicroservice } from '@nestjs/common';
import { storeKeyOf } from '../../libs/amqp-retry/src/pipeline/idempotency.step.js';
import { redisKind, uniqueSpace } from '../support/stores.js';
import { dropTables, pgKind, sql, uniqueTable, type OutboxKind } from '../support/outbox.js';
import { useSuite } from '../support/suite.js';
import { patternTiers, sendTwiceAndFailOnce, startRetryMicroservice } from './transport-app.js';

/** The same message id twice, and a failure once: each event handled once, the failure retried by its pattern policy. */
describe('the transport handles each event once', () => {
  let kind: OutboxKind;
  const suite = useSuite<INestMicroservice>('e2e.transport.once', { extraQueues: patternTiers, afterAll: () => kind?.close() });

  beforeAll(async () => {
    kind = await pgKind();
  });

  it('with an idempotency store: a second copy is skipped, and a failure still retries through its pattern policy', async () => {
    const space = uniqueSpace();
    suite.afterThis(() => redisKind.cleanUp(space));
    suite.app = await startRetryMicroservice({ queue: suite.queue, idempotency: { store: redisKind.create(space) } });
    const calls = await sendTwiceAndFailOnce(suite.app, suite.broker, suite.queue);
    expect(calls.filter((c) => c.pattern === 'order.paid').map((c) => c.data)).toEqual([{ id: 1 }]);
    expect(calls.filter((c) => c.pattern === 'order.created').map((c) => c.attempt)).toEqual([1, 2]);
    expect(await redisKind.holds(space, storeKeyOf(suite.queue, 'same-id'))).toBe(true);
  });

  it("with an inbox: each event recorded in the server's inbox, a second copy acked without a call, a failure rolled back and retried", async () => {
    const table = uniqueTable('e2e_transport_inbox');
    suite.afterThis(() => dropTables(table));
    suite.app = await startRetryMicroservice({ queue: suite.queue, inbox: { adapter: kind.adapter, table } });
    const calls = await sendTwiceAndFailOnce(suite.app, suite.broker, suite.queue);
    expect(calls.filter((c) => c.pattern === 'order.paid').map((c) => c.data)).toEqual([{ id: 1 }]);
    expect(calls.filter((c) => c.pattern === 'order.created').map((c) => c.attempt)).toEqual([1, 2]);
    // The failed attempt's record rolled back with it; the retry's committed.
    expect((await sql(`SELECT message_id FROM "${table}" ORDER BY message_id`)).map((r) => r.message_id)).toEqual(['failing-once', 'same-id']);
  });
});
