import { randomUUID } from 'node:crypto';
import knexFactory from 'knex';
import pg from 'pg';
import { DataSource, type EntityManager } from 'typeorm';
import { pgOutboxAdapter, typeormOutboxAdapter, type OutboxAdapter } from 'nestjs-amqp-retry';
import { knexOutboxAdapter } from './knex.outbox-adapter.js';
import { POSTGRES_URL } from './stores.js';
import { cleanUp, useSuite, type Suite, type SuiteOptions } from './suite.js';

/** A table name no other test uses. */
export const uniqueTable = (prefix: string) => `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 12)}`;

/** One database library as the outbox's user: its adapter, and the user's own transactions and statements. */
export interface OutboxKind {
  name: 'pg' | 'typeorm' | 'knex';
  adapter: OutboxAdapter;
  /** The user's transaction: commits when `work` resolves, rolls back when it throws. */
  inTransaction<T>(work: (tx: unknown) => Promise<T>): Promise<T>;
  /** A statement of the user's in `tx`. */
  exec(tx: unknown, sql: string, params?: unknown[]): Promise<Array<Record<string, unknown>>>;
  close(): Promise<void>;
}

/** pg as the outbox's user, on `pool` (a test's own, a pool of one say), ended with the kind. */
export async function pgKind(pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 10 })): Promise<OutboxKind> {
  pool.on('error', () => undefined);
  return {
    name: 'pg',
    adapter: pgOutboxAdapter(pool),
    async inTransaction(work) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
    },
    exec: async (tx, sql, params = []) => (await (tx as pg.PoolClient).query(sql, params)).rows,
    close: () => pool.end(),
  };
}

export async function typeormKind(): Promise<OutboxKind> {
  const dataSource = await new DataSource({ type: 'postgres', url: POSTGRES_URL, poolSize: 10 }).initialize();
  return {
    name: 'typeorm',
    adapter: typeormOutboxAdapter(dataSource),
    inTransaction: (work) => dataSource.transaction((manager) => work(manager)),
    exec: async (tx, sql, params = []) => (await (tx as EntityManager).query(sql, params)) as Array<Record<string, unknown>>,
    close: () => dataSource.destroy(),
  };
}

export async function knexKind(): Promise<OutboxKind> {
  const knex = knexFactory({ client: 'pg', connection: POSTGRES_URL, pool: { min: 0, max: 10 } });
  return {
    name: 'knex',
    adapter: knexOutboxAdapter(knex),
    inTransaction: (work) => knex.transaction((trx) => work(trx)),
    exec: async (tx, sql, params = []) => {
      const values: unknown[] = [];
      const text = sql.replace(/\$(\d+)/g, (_, n: string) => (values.push(params[Number(n) - 1]), '?'));
      return ((await (tx as import('knex').Knex.Transaction).raw(text, values as never)) as { rows: Array<Record<string, unknown>> }).rows;
    },
    close: () => knex.destroy(),
  };
}

/** A statement outside any transaction of the test's (inspection, clean-up). */
export async function sql<T = Record<string, unknown>>(text: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}

export const dropTables = (...tables: string[]) => sql(`DROP TABLE IF EXISTS ${tables.map((t) => `"${t}"`).join(', ')}`);

/** A suite of outbox tests: a database library, and per test an outbox table and an inbox table of fresh names. */
export interface OutboxSuite extends Suite {
  kind: OutboxKind;
  /** The test's outbox table (not created: the outbox creates it), dropped after the test. */
  table: string;
  /** The test's inbox table, dropped after the test. */
  inboxTable: string;
  /** More tables of the test's, dropped after it. */
  tables: string[];
}

/** How an outbox suite differs from the default: its database library (pg), the prefix of its table names. */
export interface OutboxSuiteOptions extends SuiteOptions {
  kind?: () => Promise<OutboxKind>;
  tablePrefix?: string;
}

/**
 * The frame of an outbox test file: the suite's broker and queue, `makeKind`'s database library for the file (closed
 * after it), and per test fresh table names, the tables dropped after the test once its applications have closed.
 */
export function useOutboxSuite(prefix: string, options: OutboxSuiteOptions = {}): OutboxSuite {
  const { kind: makeKind = () => pgKind(), tablePrefix = 'e2e_outbox', afterAll: after, ...suiteOptions } = options;
  const suite = useSuite(prefix, {
    ...suiteOptions,
    afterAll: () =>
      cleanUp(
        () => (suite as OutboxSuite).kind?.close(),
        () => after?.(),
      ),
  }) as OutboxSuite;
  suite.tables = [];
  beforeAll(async () => {
    suite.kind = await makeKind();
  });
  beforeEach(() => {
    suite.table = uniqueTable(tablePrefix);
    suite.inboxTable = uniqueTable(tablePrefix.replace('outbox', 'inbox'));
    suite.tables = [];
    suite.afterThis(() => dropTables(suite.table, suite.inboxTable, ...suite.tables));
  });
  return suite;
}
