import pg from 'pg';
import { outboxMigration, type OutboxBacklogEvent, type RetryObserver } from 'nestjs-amqp-retry';
import { outboxSql } from '../../libs/amqp-retry/src/core/outbox/outbox.sql.js';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { sql, useOutboxSuite } from '../support/outbox.js';
import { POSTGRES_URL } from '../support/stores.js';

/** Rows past their retention at the start: twenty cleanup batches. */
const OLD_ROWS = 20_000;
/** Rows within their retention beside a few past it: the rows a cleanup that read them all would pay for. */
const KEPT_ROWS = 100_000;

/** EXPLAIN ANALYZE of `statement` with `params` (rolled back): the plan's lines; then the statement itself, and its answer. */
async function explainThenRun(statement: string, params: unknown[]): Promise<{ plan: string; deleted: number }> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query('BEGIN');
    const explained = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, COSTS OFF) ${statement}`, params);
    await client.query('ROLLBACK');
    const { rows } = await client.query<{ deleted: number }>(statement, params);
    return { plan: explained.rows.map((row) => row['QUERY PLAN']).join('\n'), deleted: Number(rows[0]?.deleted ?? 0) };
  } finally {
    await client.end();
  }
}

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

  it('reads the sent rows past their retention through the sent index, not the rows it keeps', async () => {
    const statements = outboxSql({ table: suite.table, inboxTable: suite.inboxTable });
    await sql(
      `INSERT INTO "${suite.table}" (exchange, routing_key, body, state, attempts, sent_at)
       SELECT '', 'kept', '\\x00', 'sent', 1, clock_timestamp() - n * interval '1 ms' FROM generate_series(1, ${KEPT_ROWS}) AS n`,
    );
    await sql(
      `INSERT INTO "${suite.table}" (exchange, routing_key, body, state, attempts, sent_at)
       SELECT '', 'old', '\\x00', 'sent', 1, clock_timestamp() - interval '2 hours' FROM generate_series(1, 10)`,
    );
    await sql(`ANALYZE "${suite.table}"`);

    const { plan, deleted } = await explainThenRun(statements.cleanup, [3_600_000]);
    expect(plan).toMatch(/Index Cond: \(sent_at < /);
    expect(plan).not.toMatch(/Seq Scan|Rows Removed by Filter/);
    expect(deleted).toBe(10); // the retention: the 10 rows of two hours ago, none of the last hour's
  });

  it("reads a queue's inbox records past their retention through the queue and handled-at index, not the records it keeps", async () => {
    const statements = outboxSql({ table: suite.table, inboxTable: suite.inboxTable });
    await sql(
      `INSERT INTO "${suite.inboxTable}" (queue, message_id, handled_at)
       SELECT $1, 'kept-' || n, clock_timestamp() - n * interval '1 ms' FROM generate_series(1, ${KEPT_ROWS}) AS n`,
      [suite.queue],
    );
    await sql(
      `INSERT INTO "${suite.inboxTable}" (queue, message_id, handled_at)
       SELECT q, 'old-' || n, clock_timestamp() - interval '2 hours' FROM generate_series(1, 10) AS n, unnest($1::text[]) AS q`,
      [[suite.queue, `${suite.queue}.other`]],
    );
    await sql(`ANALYZE "${suite.inboxTable}"`);

    const { plan, deleted } = await explainThenRun(statements.inboxCleanup, [3_600_000, suite.queue]);
    expect(plan).toMatch(/Index Scan using \S+_queue_handled_at_idx/);
    expect(plan).not.toMatch(/Seq Scan/);
    expect(deleted).toBe(10); // this queue's 10 of two hours ago: not the last hour's, nor the other queue's
  });

  it("reads only its own queue's records past its retention when another queue keeps older records in the table", async () => {
    const statements = outboxSql({ table: suite.table, inboxTable: suite.inboxTable });
    // Another queue's records, within its longer retention, all older than this queue's cutoff; this queue's own
    // records, most within its retention: neither the handled-at index nor the primary key (queue first) bounds both.
    await sql(
      `INSERT INTO "${suite.inboxTable}" (queue, message_id, handled_at)
       SELECT $1, 'theirs-' || n, clock_timestamp() - interval '2 hours' - n * interval '1 ms' FROM generate_series(1, ${KEPT_ROWS}) AS n`,
      [`${suite.queue}.long-kept`],
    );
    await sql(
      `INSERT INTO "${suite.inboxTable}" (queue, message_id, handled_at)
       SELECT $1, 'old-' || n, clock_timestamp() - interval '2 hours' FROM generate_series(1, 10) AS n
       UNION ALL SELECT $1, 'kept-' || n, clock_timestamp() - n * interval '1 ms' FROM generate_series(1, ${KEPT_ROWS}) AS n`,
      [suite.queue],
    );
    await sql(`ANALYZE "${suite.inboxTable}"`);

    const { plan, deleted } = await explainThenRun(statements.inboxCleanup, [3_600_000, suite.queue]);
    expect(plan).toMatch(/Index Scan using \S+_queue_handled_at_idx/);
    expect(plan).not.toMatch(/Seq Scan|Rows Removed by Filter/);
    expect(deleted).toBe(10);
  });
});
