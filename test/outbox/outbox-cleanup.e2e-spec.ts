import type { INestApplicationContext } from '@nestjs/common';
import { outboxMigration, type OutboxBacklogEvent, type RetryObserver } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { dropTables, pgKind, sql, uniqueTable, type OutboxKind } from '../support/outbox.js';
import { cleanUp } from '../support/suite.js';

/** Rows past their retention at the start: twenty cleanup batches. */
const OLD_ROWS = 20_000;

/**
 * The cleanups keep the tables bounded at any rate: a cleanup deletes batch after batch (1,000 rows each, in a
 * transaction of its own) until none is left past its retention, instead of one batch a period, which a relay
 * sending more than that a period outgrew for good. The outbox table's size is a metric.
 */
describe('the outbox and inbox cleanups', () => {
  let kind: OutboxKind;
  let broker: TestBroker;
  let app: INestApplicationContext | undefined;
  let table: string;
  let inboxTable: string;
  let queue: string;

  beforeAll(async () => {
    kind = await pgKind();
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await cleanUp(
      () => broker?.close(),
      () => kind?.close(),
    );
  });
  beforeEach(async () => {
    table = uniqueTable('e2e_outbox_clean');
    inboxTable = uniqueTable('e2e_inbox_clean');
    queue = uniqueName('e2e.outbox.clean');
    await sql(outboxMigration({ table, inboxTable }).replace(/^(BEGIN|COMMIT);$/gm, ''));
  });
  afterEach(async () => {
    await cleanUp(
      () => app?.close(),
      () => broker.deleteRetryTopology(queue),
      () => dropTables(table, inboxTable),
    );
    app = undefined;
  });

  it('deletes every sent row past its retention at one cleanup, 20,000 of them, and reports the table size', async () => {
    await sql(
      `INSERT INTO "${table}" (exchange, routing_key, body, state, attempts, sent_at)
       SELECT '', 'old', '\\x00', 'sent', 1, clock_timestamp() - interval '1 hour' FROM generate_series(1, ${OLD_ROWS})`,
    );
    await sql(
      `INSERT INTO "${table}" (exchange, routing_key, body, state, attempts, sent_at) VALUES ('', 'recent', '\\x00', 'sent', 1, clock_timestamp())`,
    );
    const backlog: OutboxBacklogEvent[] = [];
    const observer: RetryObserver = { outboxBacklog: (event) => void backlog.push(event) };
    const started = Date.now();
    app = await startApp([], { ...TEST_OPTIONS, observers: [observer], outbox: { adapter: kind.adapter, table, retention: '10m' } });

    await waitFor(async () => (await sql(`SELECT id FROM "${table}" WHERE routing_key = 'old' LIMIT 1`)).length === 0, 'the old rows deleted', 8_000);
    const tookMs = Date.now() - started;
    expect(await sql(`SELECT routing_key FROM "${table}"`)).toEqual([{ routing_key: 'recent' }]); // within its retention: kept
    const reported = await waitFor(() => backlog.at(-1), 'a backlog reading');
    const [{ bytes }] = await sql<{ bytes: string }>(`SELECT pg_total_relation_size('"${table}"'::regclass)::text AS bytes`);
    expect(reported.tableBytes).toBeGreaterThan(0);
    expect(reported.tableBytes).toBeLessThanOrEqual(Number(bytes) * 2);
    console.log(`${OLD_ROWS} sent rows deleted ${tookMs} ms after the start; table ${reported.tableBytes} bytes`);
  });

  it('deletes every inbox record past its retention at the first handled message, 20,000 of them', async () => {
    await sql(
      `INSERT INTO "${inboxTable}" (queue, message_id, handled_at)
       SELECT $1, 'old-' || n, clock_timestamp() - interval '2 hours' FROM generate_series(1, ${OLD_ROWS}) AS n`,
      [queue],
    );
    const Handler = handlerFor({ queue, inbox: { adapter: kind.adapter, table: inboxTable, retention: '1h' } }, () => undefined);
    app = await startApp([Handler], TEST_OPTIONS);
    await broker.publish('', queue, { id: 1 }, { messageId: 'fresh' });
    await waitFor(() => handlerOf(app!, Handler).calls.length === 1, 'the message handled');
    await waitFor(
      async () => (await sql(`SELECT 1 FROM "${inboxTable}" WHERE message_id LIKE 'old-%' LIMIT 1`)).length === 0,
      'the old records deleted',
      8_000,
    );
    expect(await sql(`SELECT message_id FROM "${inboxTable}"`)).toEqual([{ message_id: 'fresh' }]);
  });
});
