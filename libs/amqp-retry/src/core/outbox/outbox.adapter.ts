/** What a statement answers: its rows (RETURNING included). */
export interface SqlResult {
  /** The rows, each a record of column name to value. */
  rows: Array<Record<string, unknown>>;
}

/**
 * How the outbox and the inbox reach PostgreSQL, whatever the driver: `Tx` is what your code holds inside a
 * transaction (a pg PoolClient after BEGIN, a TypeORM EntityManager, a Knex or Prisma transaction; docs/outbox.md).
 * Statements use `$1, $2...` placeholders; values are strings, numbers, Buffers, string arrays and null.
 */
export interface OutboxAdapter<Tx = unknown> {
  /** Runs one statement in the caller's transaction `tx` (the outbox's publish; the inbox's record). */
  execute(tx: Tx, sql: string, params: readonly unknown[]): Promise<SqlResult>;
  /** Runs `work` in a new transaction: commits when it resolves, rolls back when it throws (and rethrows). */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * Calls `onNotify` for each NOTIFY on `channel`, on a connection of its own, until the returned function is called;
   * `onLost` when that connection fails. Optional: without it the relay polls.
   */
  listen?(channel: string, onNotify: () => void, onLost: (error: unknown) => void): Promise<() => Promise<void>>;
  /** The most connections the pool opens, when it can tell: the start refuses a pool too small for the relay. Optional. */
  maxConnections?(): number | undefined;
}

/**
 * What `OutboxPublisher.publish` takes for `tx`: a pool, a Knex instance or a TypeORM DataSource fail to compile with a
 * message saying so. The rest is checked at run time: a statement in no transaction writes nothing and throws.
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
