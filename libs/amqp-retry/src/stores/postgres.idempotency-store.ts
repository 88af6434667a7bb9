import type { ClaimResult, IdempotencyStore } from '../core/idempotency/idempotency.store.js';
import { readDuration, readFlag, TIME_LIMIT_RANGE } from '../core/config/config.readers.js';
import { type DurationTimer, startInterval } from '../core/time/duration.timer.js';
import type { Duration } from '../core/time/duration.reader.js';
import { DDL_LOCK_SQL } from '../core/sql/ddl.lock.js';
import { IDENTIFIER, indexName, qualifiedName } from '../core/sql/sql-identifier.reader.js';
import { RetryConfigError } from '../errors/retry-config.error.js';
import { cleanUpInBatches } from '../core/outbox/outbox.cleanup.js';
import { CLEANUP_BATCH } from '../core/outbox/outbox.sql.js';
import { requireOneOf } from './store.options.js';

/** What the store needs of a pg Pool, so that pg stays an optional dependency. */
export interface PgLikePool {
  /** Runs one SQL statement with its parameters. */
  query(
    text: string,
    values?: unknown[],
  ): Promise<{
    /** The rows the statement returned. */
    rows: Array<Record<string, unknown>>;
    /** The rows it changed or returned, when the driver says. */
    rowCount: number | null;
  }>;
  /** Closes the pool (only a pool the store opened itself). */
  end(): Promise<void>;
}

/** Options of PostgresIdempotencyStore: where the table is, and how often expired rows are deleted. */
export interface PostgresIdempotencyStoreOptions {
  /** A PostgreSQL connection string; the store opens its own pg Pool on first use and closes it with the application. */
  connectionString?: string;
  /** Or a pool of yours (pg): used as it is, and left open. */
  pool?: PgLikePool;
  /** The table; default 'amqp_retry_idempotency'. Created if missing (`createTables`). */
  table?: string;
  /** Its schema; default the connection's search path. Created if missing (`createTables`). */
  schema?: string;
  /**
   * true (default): the schema, the table and its index are created on first use if missing. false: you run the
   * migration yourself (`migration()` returns its statements), and the first use fails, naming it, while the table is
   * missing. Needed for a role that may not create objects: PostgreSQL checks the CREATE permission (and for the
   * index, ownership of the table) even when the object exists, so with true every call of such a role fails.
   */
  createTables?: boolean;
  /** How often expired rows are deleted (in batches of 1,000 until none is left); default '1m'; 0 never (call purgeExpired yourself). */
  cleanupInterval?: Duration;
}

/** The columns the store's statements use. */
const COLUMNS: readonly string[] = ['key', 'state', 'token', 'expires_at'];
/** A cleanup's time, at most: the batches it leaves wait for the next interval. */
const CLEANUP_BUDGET_MS = 10_000;

function readIdentifier(value: string | undefined, fallback: string | undefined, option: string): string | undefined {
  if (value === undefined || IDENTIFIER.test(value)) return value ?? fallback;
  throw new RetryConfigError(
    `PostgresIdempotencyStore option "${option}"`,
    `is ${JSON.stringify(value)}`,
    'Use letters, digits and _ (at most 63), starting with a letter or _.',
  );
}

/**
 * An IdempotencyStore in PostgreSQL: one row per message key (`key` "<queue>:<message key>", `state` claimed or
 * handled, `token` the claim's holder, `expires_at` the claim's expiry or the record's), in a table the store creates
 * on first use, or you do with migration() and `createTables: false`. Times come from the database's clock
 * (clock_timestamp()), so instances with skewed clocks agree. Expired rows count as absent at once and are deleted
 * every `cleanupInterval`. Needs the optional dependency `pg` when given a `connectionString` (loaded on first use).
 * @example new PostgresIdempotencyStore({ connectionString: 'postgres://postgres@127.0.0.1:5432/app' })
 */
export class PostgresIdempotencyStore implements IdempotencyStore {
  private pool?: Promise<PgLikePool>;
  private readonly table: string;
  /** The table as the user named it, for messages. */
  private readonly shown: string;
  private readonly createTables: boolean;
  private readonly cleanupMs: number;
  private cleanupTimer?: DurationTimer;
  private cleaning = false;
  private closed = false;

  constructor(private readonly options: PostgresIdempotencyStoreOptions) {
    requireOneOf('PostgresIdempotencyStore', options, 'connectionString', 'pool', "{ connectionString: 'postgres://user@host:5432/db' }");
    const table = readIdentifier(options.table, 'amqp_retry_idempotency', 'table') as string;
    const schema = readIdentifier(options.schema, undefined, 'schema');
    this.table = qualifiedName(table, schema);
    this.shown = schema === undefined ? table : `${schema}.${table}`;
    this.createTables = readFlag(options.createTables, 'PostgresIdempotencyStore option "createTables"', true);
    const cleanupKey = 'PostgresIdempotencyStore option "cleanupInterval"';
    this.cleanupMs = readDuration(options.cleanupInterval, cleanupKey, "'1m', or 0 for never", TIME_LIMIT_RANGE, 60_000);
  }

  /** The statements that create the table and its index (idempotent): run by the store on first use unless `createTables` is false. */
  migration(): string[] {
    const table = readIdentifier(this.options.table, 'amqp_retry_idempotency', 'table') as string;
    return [
      ...(this.options.schema === undefined ? [] : [`CREATE SCHEMA IF NOT EXISTS "${this.options.schema}"`]),
      `CREATE TABLE IF NOT EXISTS ${this.table} (
        key text PRIMARY KEY,
        state text NOT NULL CHECK (state IN ('claimed', 'handled')),
        token text,
        expires_at timestamptz NOT NULL
      )`,
      `CREATE INDEX IF NOT EXISTS "${indexName(table, 'expires_at_idx')}" ON ${this.table} (expires_at)`,
    ];
  }

  async claim(key: string, token: string, claimTtlMs: number): Promise<ClaimResult> {
    // The upsert takes an absent or expired row; the subquery reads the row as it was before (same snapshot), so a
    // live 'handled' row answers 'handled' and a live claim 'busy'. A row another instance is inserting right now is
    // not visible yet: NULL, 'busy', and the caller checks again.
    const { rows } = await this.query(
      `WITH taken AS (
         INSERT INTO ${this.table} AS r (key, state, token, expires_at)
         VALUES ($1, 'claimed', $2, clock_timestamp() + $3 * interval '1 millisecond')
         ON CONFLICT (key) DO UPDATE SET state = 'claimed', token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
           WHERE r.expires_at <= clock_timestamp()
         RETURNING 1)
       SELECT CASE WHEN EXISTS (SELECT 1 FROM taken) THEN 'claimed'
                   WHEN (SELECT state FROM ${this.table} WHERE key = $1 AND expires_at > clock_timestamp()) = 'handled' THEN 'handled'
                   ELSE 'busy' END AS result`,
      [key, token, claimTtlMs],
    );
    return rows[0]?.result as ClaimResult;
  }

  async renew(key: string, token: string, claimTtlMs: number): Promise<boolean> {
    const { rowCount } = await this.query(
      `UPDATE ${this.table} SET expires_at = clock_timestamp() + $3 * interval '1 millisecond' WHERE key = $1 AND state = 'claimed' AND token = $2`,
      [key, token, claimTtlMs],
    );
    return (rowCount ?? 0) > 0;
  }

  async release(key: string, token: string): Promise<void> {
    await this.query(`DELETE FROM ${this.table} WHERE key = $1 AND state = 'claimed' AND token = $2`, [key, token]);
  }

  async markHandled(key: string, ttlMs: number): Promise<void> {
    await this.query(
      `INSERT INTO ${this.table} (key, state, token, expires_at) VALUES ($1, 'handled', NULL, clock_timestamp() + $2 * interval '1 millisecond')
       ON CONFLICT (key) DO UPDATE SET state = 'handled', token = NULL, expires_at = EXCLUDED.expires_at`,
      [key, ttlMs],
    );
  }

  /** Deletes up to 1,000 expired rows; returns how many. */
  async purgeExpired(): Promise<number> {
    // The outer condition on expires_at is what keeps a live row: a row the subquery found expired may be taken over
    // (a claim, a record) by a transaction the DELETE then waits for, and once that commits PostgreSQL re-checks the
    // new row version against the outer WHERE only (READ COMMITTED); `key IN (...)` alone still holds for it.
    // The cutoff is `now()`, stable within the statement, so PostgreSQL reads `_expires_at_idx` up to it
    // (`clock_timestamp()`, volatile, bounds no index scan: every live row would be read).
    const { rowCount } = await this.query(
      `DELETE FROM ${this.table} WHERE key IN (SELECT key FROM ${this.table} WHERE expires_at <= now() LIMIT ${CLEANUP_BATCH})
         AND expires_at <= now()`,
    );
    return rowCount ?? 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cleanupTimer?.cancel();
    const pool = this.pool;
    this.pool = undefined;
    if (pool && this.options.pool === undefined) await (await pool.catch(() => undefined))?.end().catch(() => undefined);
  }

  private async query(text: string, values?: unknown[]) {
    if (this.closed) throw new Error('the store is closed');
    const pool = await (this.pool ??= this.open());
    return pool.query(text, values);
  }

  private async open(): Promise<PgLikePool> {
    let pool: PgLikePool | undefined;
    try {
      pool = this.options.pool ?? (await this.createPool());
      // One simple-protocol query of several statements, which PostgreSQL runs as one implicit transaction (rolled
      // back whole on an error), under the library's DDL lock: instances starting at once take turns. Without the
      // lock, two CREATE TABLE IF NOT EXISTS at once could fail with "duplicate key value violates unique constraint
      // pg_type_typname_nsp_index" (the table's row type), about one start in seven in the e2e tests.
      if (this.createTables) await pool.query([DDL_LOCK_SQL, ...this.migration()].join(';\n'));
      else await this.checkTable(pool);
    } catch (error) {
      this.pool = undefined; // try again (migration included) on the next call, on a fresh pool
      if (pool !== undefined && pool !== this.options.pool) await pool.end().catch(() => undefined);
      throw error;
    }
    if (this.cleanupMs !== 0) this.cleanupTimer ??= startInterval(this.cleanupMs, () => void this.cleanUp()).unref();
    return pool;
  }

  /** With createTables false: the table must exist (the migration was run) and have the columns the statements use. */
  private async checkTable(pool: PgLikePool): Promise<void> {
    const { rows } = await pool.query(
      'SELECT attname::text AS name FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped',
      [this.table],
    );
    const columns = rows.map((row) => String(row.name));
    if (columns.length === 0) {
      throw new Error(
        `PostgresIdempotencyStore: the table ${this.shown} does not exist, and createTables is false: run the statements of the store's migration() (as a role that may create it), or set createTables: true`,
      );
    }
    const lacking = COLUMNS.filter((column) => !columns.includes(column));
    if (lacking.length > 0) {
      throw new Error(
        `PostgresIdempotencyStore: the table ${this.shown} is not one of this library's: it lacks the column${lacking.length === 1 ? '' : 's'} ${lacking.join(', ')}. Give the option table the name of a table created by migration(), or rename the table that has this name.`,
      );
    }
  }

  private async createPool(): Promise<PgLikePool> {
    const pg = await import('pg').catch((error: unknown) => {
      throw new Error(`PostgresIdempotencyStore needs the package pg: npm install pg (${String(error)})`);
    });
    const Pool = pg.default?.Pool ?? (pg as unknown as typeof pg.default).Pool;
    // A short connection timeout: while the database is down, calls fail soon and the message is retried.
    const pool = new Pool({ connectionString: this.options.connectionString, connectionTimeoutMillis: 5_000, max: 10 });
    pool.on('error', () => undefined); // an idle client's lost connection: the next query reports it
    return pool;
  }

  /**
   * Deletes expired rows batch after batch until a batch finds fewer than 1,000 (or CLEANUP_BUDGET_MS passes): one
   * batch per interval would let a table that gains more than 1,000 rows an interval grow without end.
   */
  private async cleanUp(): Promise<void> {
    if (this.cleaning || this.closed) return;
    this.cleaning = true;
    try {
      await cleanUpInBatches(() => this.purgeExpired(), CLEANUP_BUDGET_MS);
    } catch {
      // the next interval tries again
    } finally {
      this.cleaning = false;
    }
  }
}
