import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { pgOutboxAdapter, RetryEngine } from 'nestjs-amqp-retry';
import { handlerFor, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { sql, useOutboxSuite } from '../support/outbox.js';
import { POSTGRES_URL } from '../support/stores.js';
import { outboxSql } from '../../libs/amqp-retry/src/core/outbox/outbox.sql.js';

/** Index names of a table, as PostgreSQL holds them. */
const indexesOf = async (table: string) =>
  (await sql<{ name: string }>(`SELECT indexname AS name FROM pg_indexes WHERE tablename = $1 ORDER BY indexname`, [table])).map((row) => row.name);

/**
 * The tables the start makes sure of: names of 63 characters keep their indexes (each name fits, none clashes), a
 * table of another shape under the configured name fails the start naming the table, the option and the fix, and a
 * database that refuses the relay a permission is reported as that, not as a database out of reach, until a round
 * succeeds.
 */
describe('the outbox and inbox tables at the start', () => {
  const suite = useOutboxSuite('e2e.outbox.names');

  it('gives tables of 63 characters all their indexes', async () => {
    const id = randomUUID().replace(/-/g, '').slice(0, 12);
    const table = `e2e_outbox_${id}_`.padEnd(63, 'o');
    const inboxTable = `e2e_inbox_${id}_`.padEnd(63, 'i');
    const { kind } = suite;
    suite.tables.push(table, inboxTable);
    const Handler = handlerFor({ queue: suite.queue, inbox: { adapter: kind.adapter, table: inboxTable } }, () => undefined);
    suite.app = await startApp([Handler], { ...TEST_OPTIONS, outbox: { adapter: kind.adapter, table } });
    const outboxIndexes = await indexesOf(table);
    expect(outboxIndexes).toHaveLength(5); // the primary key and the four of the relay, the cleanup and the backlog
    expect(outboxIndexes.filter((name) => /_(pending|order|sent|parked)_idx$/.test(name))).toHaveLength(4);
    const inboxIndexes = await indexesOf(inboxTable);
    expect(inboxIndexes).toHaveLength(3); // the primary key, handled_at's, and queue and handled_at's
    expect(inboxIndexes.filter((name) => name.endsWith('_handled_at_idx'))).toHaveLength(2);
    expect(inboxIndexes.some((name) => name.endsWith('_queue_handled_at_idx'))).toBe(true);
    await suite.app.close();
    suite.app = undefined;
    // An index dropped behind the library's back fails the next start with createTables: false, naming it.
    await sql(`DROP INDEX "${outboxIndexes.find((name) => name.endsWith('_sent_idx'))}"`);
    await expect(startApp([], { ...TEST_OPTIONS, outbox: { adapter: kind.adapter, table, createTables: false } })).rejects.toThrow(
      new RegExp(`The table ${table} \\(option outbox.table\\) lacks the index \\S+_sent_idx, which the library needs`),
    );
  });

  it('reads the backlog (waiting, oldest, parked) from its partial indexes, never scanning the sent rows', async () => {
    const table = `e2e_outbox_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    suite.tables.push(table, `${table}_inbox`);
    const names = { table, inboxTable: `${table}_inbox` };
    const statements = outboxSql(names);
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      for (const statement of statements.outboxTables) await client.query(statement);
      await client.query(
        `INSERT INTO "${table}" (exchange, routing_key, body, state, sent_at) SELECT '', 'q', '\\x00', 'sent', clock_timestamp() FROM generate_series(1, 2000)`,
      );
      await client.query(
        `INSERT INTO "${table}" (exchange, routing_key, body, state) VALUES ('', 'q', '\\x00', 'pending'), ('', 'q', '\\x00', 'parked')`,
      );
      await client.query('ANALYZE "' + table + '"');
      // With sequential scans priced out, a plan still holding one could not have used an index.
      await client.query('SET enable_seqscan = off');
      const plan = JSON.stringify((await client.query(`EXPLAIN (FORMAT JSON) ${statements.stats}`)).rows);
      expect(plan).not.toContain('Seq Scan');
      const [row] = (await client.query(statements.stats)).rows as Array<Record<string, string>>;
      expect([row.waiting, row.parked]).toEqual(['1', '1']);
    } finally {
      await client.end();
    }
  });

  it('makes sure of an inbox table of one name on each database its adapters reach', async () => {
    const schema = `e2e_other_db_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    await sql(`CREATE SCHEMA "${schema}"`);
    // A pool whose unqualified names resolve in a schema of its own: to the library, another database.
    const other = new pg.Pool({ connectionString: POSTGRES_URL, max: 4, options: `-c search_path="${schema}"` });
    suite.afterThis(async () => {
      await other.end();
      await sql(`DROP SCHEMA "${schema}" CASCADE`);
    });
    const inbox = (adapter: typeof suite.kind.adapter) => ({ adapter, table: suite.inboxTable });
    const [here, there] = [suite.retryQueue(), suite.retryQueue()];
    const Here = handlerFor({ queue: here, inbox: inbox(suite.kind.adapter) }, () => undefined);
    const There = handlerFor({ queue: there, inbox: inbox(pgOutboxAdapter(other)) }, () => undefined);
    suite.app = await startApp([Here, There], TEST_OPTIONS);
    await suite.broker.publish('', here, { id: 1 }, { messageId: 'm-here' });
    await suite.broker.publish('', there, { id: 2 }, { messageId: 'm-there' });

    const recorded = async (table: string) => (await sql<{ message_id: string }>(`SELECT message_id FROM ${table}`)).map((r) => r.message_id);
    await waitFor(async () => (await recorded(`"${schema}"."${suite.inboxTable}"`)).length === 1, 'the other database recording its message');
    expect(await recorded(`"${schema}"."${suite.inboxTable}"`)).toEqual(['m-there']);
    await waitFor(async () => (await recorded(`"${suite.inboxTable}"`)).length === 1, 'this database recording its message');
    expect(await recorded(`"${suite.inboxTable}"`)).toEqual(['m-here']);
  });

  it('fails the start on a table of another shape, naming the table, the option and the fix', async () => {
    const table = `e2e_debezium_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    const { kind } = suite;
    suite.tables.push(table);
    await sql(`CREATE TABLE "${table}" (id uuid PRIMARY KEY, aggregatetype text, aggregateid text, type text, payload jsonb)`);
    await expect(startApp([], { ...TEST_OPTIONS, outbox: { adapter: kind.adapter, table } })).rejects.toThrow(
      `The table ${table} (option outbox.table) is not one of this library's: it lacks the columns exchange, routing_key, body, properties, order_key, delay_ms, state, attempts, last_error, created_at, available_at, sent_at. Give outbox.table the name of a table of the library's own`,
    );
  });

  it('reports a permission the database refuses the relay as that, and is healthy once it is granted', async () => {
    const id = randomUUID().replace(/-/g, '').slice(0, 12);
    const table = `e2e_outbox_perm_${id}`;
    const role = `e2e_outbox_role_${id}`;
    const { kind } = suite;
    suite.tables.push(table);
    await sql(`CREATE ROLE "${role}" LOGIN`);
    const url = new URL(POSTGRES_URL);
    url.username = role;
    url.password = '';
    const pool = new pg.Pool({ connectionString: url.toString(), max: 5 });
    pool.on('error', () => undefined);
    suite.afterThis(() => pool.end());
    suite.afterThis(() => sql(`DROP OWNED BY "${role}"`).catch(() => undefined));
    suite.afterThis(() => sql(`DROP ROLE IF EXISTS "${role}"`));
    // The table made by the owner; the application's role may read its shape, not its rows.
    suite.app = await startApp([], { ...TEST_OPTIONS, outbox: { adapter: kind.adapter, table, relay: false } });
    await suite.app.close();
    suite.app = undefined;
    suite.app = await startApp([], {
      ...TEST_OPTIONS,
      outbox: { adapter: pgOutboxAdapter(pool), table, createTables: false, pollInterval: '100ms' },
    });
    const engine = suite.app.get(RetryEngine);
    const problem = await waitFor(() => engine.health().outbox?.problem, 'the relay reporting a problem');
    expect(problem).toMatch(
      new RegExp(
        `^the outbox relay of ${table} is refused by the database: permission denied for table ${table} \\(SQLSTATE 42501, insufficient privilege: grant`,
      ),
    );
    expect(problem).not.toMatch(/cannot reach the database/);
    // Granted: the next round succeeds, and health is up again though no row was there to send.
    await sql(`GRANT SELECT, UPDATE, DELETE ON "${table}" TO "${role}"`);
    await waitFor(() => engine.health().outbox?.relaying === true, 'the relay healthy again');
    expect(engine.health().outbox?.problem).toBeUndefined();
  });
});
