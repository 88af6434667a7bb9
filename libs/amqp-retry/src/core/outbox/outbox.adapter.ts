/** What a statement answers: its rows (RETURNING included). */
export interface SqlResult {
  /** The rows, each a record of column name to value. */
  rows: Array<Record<string, unknown>>;
}

/**
 * How the outbox and the inbox reach PostgreSQL, whatever the driver or ORM: `Tx` is what your code holds inside a
 * transaction (a pg PoolClient after BEGIN, a TypeORM EntityManager, a Knex transaction, a Prisma transaction
 * client). The library ships pgOutboxAdapter and typeormOutboxAdapter; another library implements these in a few
 * lines (docs/outbox.md has Knex and Prisma).
 *
 * Statements use PostgreSQL's `$1, $2...` placeholders; values are strings, numbers, Buffers, string arrays and
 * null.
 */
export interface OutboxAdapter<Tx = unknown> {
  /** Runs one statement in the caller's transaction `tx` (the outbox's publish; the inbox's record). */
  execute(tx: Tx, sql: string, params: readonly unknown[]): Promise<SqlResult>;
  /**
   * Runs `work` in a new transaction: commits when it resolves, rolls back when it throws (and rethrows). The relay
   * claims and marks rows in one; the inbox runs a handler in one.
   */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * True when `transaction` refuses to commit a transaction in which a statement failed (PostgreSQL ends one with a
   * ROLLBACK at COMMIT, without an error: a handler that caught such a failure would be acked with none of its writes).
   * Without it, the inbox checks with a statement of its own after the handler, one round trip more. Optional.
   */
  readonly refusesAbortedCommit?: boolean;
  /**
   * Calls `onNotify` for each NOTIFY on `channel` (the relay wakes at once after a commit), on a connection of its
   * own, until the returned function is called; `onLost` when that connection fails (the relay polls meanwhile and
   * listens again). Optional: without it the relay polls.
   */
  listen?(channel: string, onNotify: () => void, onLost: (error: unknown) => void): Promise<() => Promise<void>>;
  /**
   * The most connections the pool behind the adapter opens, when it can tell: the start refuses a pool too small for
   * the relay (its LISTEN holds one for good, each round takes one), which would otherwise hang. Optional.
   */
  maxConnections?(): number | undefined;
}

/**
 * What `OutboxPublisher.publish` takes for `tx`: anything but what is plainly no transaction, which fails to compile
 * with a message saying so: a connection pool (pg's Pool: it has totalCount and idleCount), or a Knex instance or a
 * TypeORM DataSource (they have transaction and destroy, and no commit, which a Knex transaction has). Whatever
 * compiles is still checked at run time: a publish whose statement runs in no transaction writes nothing and throws.
 */
export type OutboxTransaction<Tx> = Tx extends {
  /** A pg Pool's count of its clients. */
  totalCount: number;
  /** A pg Pool's count of its idle clients. */
  idleCount: number;
}
  ? 'a connection pool is not a transaction: pass the client on which you ran BEGIN'
  : Tx extends {
        /** Starts a transaction (a Knex instance, a TypeORM DataSource). */
        transaction: unknown;
        /** Closes every connection (a Knex instance, a TypeORM DataSource). */
        destroy: unknown;
      }
    ? Tx extends {
        /** Commits (a Knex transaction). */
        commit: unknown;
      }
      ? Tx
      : 'not a transaction: pass what your transaction runs on (the trx of knex.transaction(), the manager of dataSource.transaction())'
    : Tx;
