import { outboxMigration, type OutboxBacklogEvent, type RetryObserver } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { sql, useOutboxSuite } from '../support/outbox.js';

/** Rows past their retention at the start: twenty cleanup batches. */
const OLD_ROWS = 20_000;

/**
 * The cleanups keep the tables bounded at any rate: a cleanup deletes batch after batch (1,000 rows each, in a
 * transaction of its own) until none is left past its retention, instead of one batch a period, which a relay
 * sending more than that a period outgrew for good. The outbox table's size is a metric.
 */
describe('the outbox and inbox cleanups', () => {
  const suite = useOutboxSuite('e2e.outbox.clean', { tablePrefix: 'e2e_outbox_clean' });

  beforeEach(async () => {
    await sql(outboxMigration({ table: suite.table, inboxTable: suite.inboxTable }).replace(/^(BEGIN|COMMIT);$/gm, ''));
  });

  it('deletes every sent row past its retention at one cleanup, 20,000 of them, and reports the table size', async () => {
    await sql(
      `INSERT INTO "${suite.table}" (exchange, routing_key, body, state, attempts, sent_at)
       SELECT '', 'old', '\\x00', 'sent', 1, clock_timestamp() - interval '1 hour' FROM generate_series(1, ${OLD_ROWS})`,
    );
    await sql(
      `INSERT INTO "${suite.table}" (exchange, routing_key, body, state, attempts, sent_at) VALUES ('', 'recent', '\\x00', 'sent', 1, clock_timestamp())`,
    );
    const backlog: OutboxBacklogEvent[] = [];
    const observer: RetryObserver = { outboxBacklog: (event) => void backlog.push(event) };
    const started = Date.now();
    suite.app = await startApp([], {
      ...TEST_OPTIONS,
      observers: [observer],
      outbox: { adapter: suite.kind.adapter, table: suite.table, retention: '10m' },
    });

    await waitFor(
      async () => (await sql(`SELECT id FROM "${suite.table}" WHERE routing_key = 'old' LIMIT 1`)).length === 0,
      'the old rows deleted',
      8_000,
    );
    const tookMs = Date.now() - started;
    expect(await sql(`SELECT routing_key FROM "${suite.table}"`)).toEqual([{ routing_key: 'recent' }]); // within its retention: kept
    const reported = await waitFor(() => backlog.at(-1), 'a backlog reading');
    const [{ bytes }] = await sql<{ bytes: string }>(`SELECT pg_total_relation_size('"${suite.table}"'::regclass)::text AS bytes`);
    expect(reported.tableBytes).toBeGreaterThan(0);
    expect(reported.tableBytes).toBeLessThanOrEqual(Number(bytes) * 2);
    console.log(`${OLD_ROWS} sent rows deleted ${tookMs} ms after the start; table ${reported.tableBytes} bytes`);
  });

  it("deletes every inbox record of its queue past its retention at the first handled message, 20,000 of them, and no other queue's", async () => {
    await sql(
      `INSERT INTO "${suite.inboxTable}" (queue, message_id, handled_at)
       SELECT $1, 'old-' || n, clock_timestamp() - interval '2 hours' FROM generate_series(1, ${OLD_ROWS}) AS n`,
      [suite.queue],
    );
    // A handler that keeps its records longer (the module's 7 days) shares the table.
    await sql(`INSERT INTO "${suite.inboxTable}" (queue, message_id, handled_at) VALUES ($1, 'kept', clock_timestamp() - interval '2 hours')`, [
      `${suite.queue}.weekly`,
    ]);
    const Handler = handlerFor(
      { queue: suite.queue, inbox: { adapter: suite.kind.adapter, table: suite.inboxTable, retention: '1h' } },
      () => undefined,
    );
    suite.app = await startApp([Handler], TEST_OPTIONS);
    await suite.broker.publish('', suite.queue, { id: 1 }, { messageId: 'fresh' });
    await waitFor(() => handlerOf(suite.app!, Handler).calls.length === 1, 'the message handled');
    await waitFor(
      async () => (await sql(`SELECT 1 FROM "${suite.inboxTable}" WHERE message_id LIKE 'old-%' LIMIT 1`)).length === 0,
      'the old records deleted',
      8_000,
    );
    expect(await sql(`SELECT message_id FROM "${suite.inboxTable}" ORDER BY message_id`)).toEqual([{ message_id: 'fresh' }, { message_id: 'kept' }]);
  });
});
