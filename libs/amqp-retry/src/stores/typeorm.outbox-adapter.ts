import type { OutboxAdapter, SqlResult } from '../core/outbox/outbox.adapter.js';
import { isTimeout } from '../errors/handler-timeout.error.js';
import { listenOn, type ListeningClient } from './pg.outbox-adapter.js';

/** What the adapter needs of a TypeORM QueryRunner (typeorm stays an optional dependency: it is never imported). */
export interface TypeormQueryRunnerLike {
  /** Whether the runner is inside a transaction: a publish outside one is refused. */
  readonly isTransactionActive: boolean;
  /** Runs one SQL statement with its parameters; the structured result's `records` are the rows. */
  query(
    sql: string,
    parameters: unknown[] | undefined,
    useStructuredResult: true,
  ): Promise<{
    /** The rows the statement returned. */
    records: Array<Record<string, unknown>>;
  }>;
  /** Takes a connection from the pool: with the PostgreSQL driver, it answers the pg client (for LISTEN). */
  connect(): Promise<unknown>;
  /** Gives the connection back to the pool. */
  release(): Promise<void>;
}

/** What the adapter needs of an EntityManager: the QueryRunner of its transaction. */
export interface TypeormEntityManagerLike {
  /** The QueryRunner of the transaction the manager belongs to. */
  readonly queryRunner?: TypeormQueryRunnerLike;
}

/** What the adapter needs of a DataSource. */
export interface TypeormDataSourceLike {
  /** The PostgreSQL driver's pool size: `extra.max`, else `poolSize`, else pg's 10. */
  readonly options?: {
    /** TypeORM's pool size option. */
    poolSize?: number;
    /** Options passed to the driver. */
    extra?: {
      /** pg's pool size. */
      max?: number;
    };
  };
  /** Runs `run` in a transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(run: (manager: TypeormEntityManagerLike) => Promise<T>): Promise<T>;
  /** A QueryRunner of its own (the relay's LISTEN connection). */
  createQueryRunner(): TypeormQueryRunnerLike;
}

/** The transaction handle: the EntityManager `dataSource.transaction()` hands you, or a QueryRunner after startTransaction(). */
export type TypeormTransaction = TypeormEntityManagerLike | TypeormQueryRunnerLike;

const runnerOf = (tx: TypeormTransaction): TypeormQueryRunnerLike | undefined =>
  'isTransactionActive' in tx ? tx : (tx as TypeormEntityManagerLike).queryRunner;

/**
 * The outbox and inbox on TypeORM (PostgreSQL driver): `tx` is the EntityManager of `dataSource.transaction()`, or a
 * QueryRunner after `startTransaction()`. A publish outside a transaction is refused: the row would commit on its own.
 * @example
 * ```ts
 * await dataSource.transaction(async (manager) => {
 *   await manager.save(order);
 *   await outbox.publish(manager, { exchange: 'orders', routingKey: 'order.created', body: order });
 * });
 * ```
 */
export function typeormOutboxAdapter(dataSource: TypeormDataSourceLike): OutboxAdapter<TypeormTransaction> {
  return {
    async execute(tx, sql, params) {
      const runner = runnerOf(tx);
      if (!runner?.isTransactionActive) {
        throw new Error(
          'typeormOutboxAdapter: this EntityManager or QueryRunner is not in a transaction; use the manager that dataSource.transaction() hands you',
        );
      }
      const { records } = await runner.query(sql, [...params], true);
      return { rows: records } satisfies SqlResult;
    },
    transaction: (work) =>
      dataSource.transaction(async (manager) => {
        try {
          return await work(manager);
        } catch (error) {
          // A call abandoned at its time limit may still query on this connection: TypeORM's ROLLBACK would queue
          // behind its running statement, and its next statement behind the ROLLBACK, committing alone. Destroyed
          // now, the server rolls the transaction back, and the runner refuses the late statements.
          if (isTimeout(error)) await destroyConnection(manager.queryRunner, error);
          throw error;
        }
      }),
    maxConnections() {
      const max: unknown = dataSource.options?.extra?.max ?? dataSource.options?.poolSize;
      return typeof max === 'number' ? max : undefined;
    },
    async listen(channel, onNotify, onLost) {
      const runner = dataSource.createQueryRunner();
      // The PostgreSQL driver's connect() answers the pg client itself, which LISTEN needs.
      const client = (await runner.connect()) as ListeningClient;
      return listenOn(client, channel, onNotify, onLost, () => runner.release().catch(() => undefined));
    },
  };
}

/** Releases the runner's pg client as broken (the pool closes it): TypeORM's PostgreSQL runner does so on a client error. */
async function destroyConnection(runner: TypeormQueryRunnerLike | undefined, error: Error): Promise<void> {
  const postgres = runner as { releasePostgresConnection?: (error: Error) => Promise<void> } | undefined;
  await postgres?.releasePostgresConnection?.(error).catch(() => undefined);
}
