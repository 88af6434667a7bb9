import type { ConsumeMessage } from 'amqplib';
import pg from 'pg';
import { outboxMigration } from 'nestjs-amqp-retry';
import { CLAIM_BYTES, outboxSql } from '../../libs/amqp-retry/src/core/outbox/outbox.sql.js';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { sql, useOutboxSuite } from '../support/outbox.js';
import { POSTGRES_URL } from '../support/stores.js';

/** One order key's backlog: the rows a claim that read each of them would pay for, every round. */
const BACKLOG = 20_000;

/** Pending rows, each with the body `{ k, i }`: `count` rows of order key `key` (null: none), numbered from `from`. */
const insertPending = (table: string, routingKey: string, key: string | null, count: number, from = 0) =>
  sql(
    `INSERT INTO "${table}" (exchange, routing_key, body, order_key)
     SELECT '', $1, convert_to(json_build_object('k', $2::text, 'i', n)::text, 'UTF8'), $2 FROM generate_series($3::int, $4::int) AS n`,
    [routingKey, key, from, from + count - 1],
  );

/**
 * A round's claim costs the same whatever one order key's backlog: it reads a bounded number of rows (the earliest, a
 * loose scan of the keys' earliest rows, the earliest unkeyed ones), never each row a key holds back.
 */
describe('the outbox relay with one order key far behind', () => {
  const suite = useOutboxSuite('e2e.outbox.backlog', { tablePrefix: 'e2e_outbox_backlog' });

  beforeEach(async () => {
    await sql(outboxMigration({ table: suite.table, inboxTable: suite.inboxTable }).replace(/^(BEGIN|COMMIT);$/gm, ''));
  });

  it("claims another key's row and unkeyed rows behind 20,000 rows of one key without reading them", async () => {
    const statements = outboxSql({ table: suite.table, inboxTable: suite.inboxTable });
    await insertPending(suite.table, 'k', 'K', BACKLOG);
    await insertPending(suite.table, 'l', 'L', 2);
    await insertPending(suite.table, 'free', null, 10);
    await sql(`ANALYZE "${suite.table}"`);

    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      const claimed: string[][] = [];
      const tookMs: number[] = [];
      for (let i = 0; i < 5; i++) {
        await client.query('BEGIN');
        const started = performance.now();
        const { rows } = await client.query<{ routing_key: string; order_key: string | null }>(statements.claim, [100, CLAIM_BYTES]);
        tookMs.push(performance.now() - started);
        await client.query('ROLLBACK');
        claimed.push(rows.map((row) => `${row.routing_key}:${row.order_key ?? '-'}`));
      }
      // Each key's earliest row, and every unkeyed row; no other row of K or L.
      expect(claimed.at(-1)).toEqual(['k:K', 'l:L', ...Array.from({ length: 10 }, () => 'free:-')]);

      await client.query('BEGIN');
      const explained = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, COSTS OFF) ${statements.claim}`, [100, CLAIM_BYTES]);
      await client.query('ROLLBACK');
      const plan = explained.rows.map((row) => row['QUERY PLAN']).join('\n');
      const removed = [...plan.matchAll(/Rows Removed by Filter: (\d+)/g)].reduce((sum, [, n]) => sum + Number(n), 0);
      const sorted = [...tookMs].sort((a, b) => a - b);
      console.log(`claim behind ${BACKLOG} rows of one key: ${sorted[2].toFixed(1)} ms (median of 5), ${removed} rows removed by filters`);
      expect(removed).toBeLessThan(1_000); // at most the window of the earliest rows, not the backlog
      expect(sorted[2]).toBeLessThan(250);
    } finally {
      await client.end();
    }
  });

  it('drains two keys and unkeyed rows through two relays, each key in order, a parked row holding nothing back', async () => {
    const perKey = 400;
    await sql(
      `INSERT INTO "${suite.table}" (exchange, routing_key, body, order_key, state, last_error) VALUES ('', $1, '\\x00', 'A', 'parked', 'refused')`,
      [suite.queue],
    );
    // The keys' rows interleaved in id order, unkeyed rows among them.
    for (let batch = 0; batch < 4; batch++) {
      const from = (batch * perKey) / 4;
      await insertPending(suite.table, suite.queue, 'A', perKey / 4, from);
      await insertPending(suite.table, suite.queue, 'B', perKey / 4, from);
      await insertPending(suite.table, suite.queue, null, 50, batch * 50);
    }
    await suite.broker.declareQueue(suite.queue);
    const got: ConsumeMessage[] = [];
    await suite.broker.channel.consume(suite.queue, (message) => message && (got.push(message), suite.broker.channel.ack(message)));

    const outbox = { adapter: suite.kind.adapter, table: suite.table, batchSize: 50 };
    for (let i = 0; i < 2; i++) suite.apps.push(await startApp([], { ...TEST_OPTIONS, outbox }));
    const total = 2 * perKey + 200;
    await waitFor(() => got.length >= total, `${total} messages`, 60_000);

    const bodies = got.map((message) => JSON.parse(message.content.toString()) as { k: string | null; i: number });
    const inOrder = (key: string) => bodies.filter((body) => body.k === key).map((body) => body.i);
    const upTo = (n: number) => Array.from({ length: n }, (_, i) => i);
    expect(inOrder('A')).toEqual(upTo(perKey));
    expect(inOrder('B')).toEqual(upTo(perKey));
    expect(
      bodies
        .filter((body) => body.k === null)
        .map((body) => body.i)
        .sort((a, b) => a - b),
    ).toEqual(upTo(200));
    expect(await sql(`SELECT state, count(*)::int AS n FROM "${suite.table}" GROUP BY state ORDER BY state`)).toEqual([
      { state: 'parked', n: 1 },
      { state: 'sent', n: total },
    ]);
  });

  it("takes rows while their bodies fit in a round's bytes, and a row larger than that alone", async () => {
    const statements = outboxSql({ table: suite.table, inboxTable: suite.inboxTable });
    const MiB = 1024 * 1024;
    const insertSized = (routingKey: string, bytes: number, count: number) =>
      sql(
        `INSERT INTO "${suite.table}" (exchange, routing_key, body) SELECT '', $1, convert_to(repeat('a', $2), 'UTF8') FROM generate_series(1, $3)`,
        [routingKey, bytes, count],
      );
    await insertSized('large', CLAIM_BYTES + MiB, 1);
    await insertSized('sized', 3 * MiB, 8);
    const claim = async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        await client.query('BEGIN');
        const { rows } = await client.query<{ routing_key: string; body: Buffer }>(statements.claim, [100, CLAIM_BYTES]);
        await client.query('ROLLBACK');
        return rows.map((row) => ({ routingKey: row.routing_key, bytes: row.body.length }));
      } finally {
        await client.end();
      }
    };

    expect(await claim()).toEqual([{ routingKey: 'large', bytes: CLAIM_BYTES + MiB }]); // first: alone
    await sql(`UPDATE "${suite.table}" SET state = 'sent', sent_at = clock_timestamp() WHERE routing_key = 'large'`);
    const taken = await claim();
    expect(taken).toEqual(Array.from({ length: 5 }, () => ({ routingKey: 'sized', bytes: 3 * MiB }))); // 15 MiB of the 24
  });
});
