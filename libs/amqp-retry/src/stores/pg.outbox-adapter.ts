import { isTimeout } from '../errors/handler-timeout.error.js';
import type { OutboxAdapter, SqlResult } from '../core/outbox/outbox.adapter.js';
import { abortedTransactionError } from '../core/outbox/aborted-transaction.js';

/** What the adapter needs of a pg client (a PoolClient), so that pg stays an optional dependency. */
export interface PgClientLike {
  /** Runs one SQL statement with its parameters. */
  query(
    text: string,
    values?: unknown[],
  ): Promise<{
    /** The rows the statement returned. */
    rows: Array<Record<string, unknown>>;
  }>;
  /** Gives the client back to the pool; with an error (or true), the pool closes it instead. */
  release(error?: Error | boolean): void;
  /** Listens to the client's LISTEN notifications. */
  on(
    event: 'notification',
    listener: (message: {
      /** The channel notified. */
      channel: string;
      /** The notification's payload. */
      payload?: string;
    }) => void,
  ): unknown;
  /** Listens to the client's errors (a lost connection). */
  on(event: 'error', listener: (error: Error) => void): unknown;
  /** Removes every listener of an event. */
  removeAllListeners?(event?: string): unknown;
  /** Removes one listener of an event. */
  removeListener?(event: string, listener: (error: Error) => void): unknown;
  /** pg 8.16+: 'I' idle (no transaction), 'T' in a transaction, 'E' in a failed one; older clients lack it. */
  getTransactionStatus?(): string | null;
}

/** What the adapter needs of a pg Pool. */
export interface PgPoolLike {
  /** Takes a client from the pool. */
  connect(): Promise<PgClientLike>;
  /** pg's Pool keeps its options: `max` (default 10) bounds its clients. */
  readonly options?: {
    /** The most clients the pool opens (pg's default: 10). */
    max?: number;
  };
}

/**
 * The outbox and inbox on node-postgres: `tx` is a PoolClient of yours inside BEGIN ... COMMIT; the relay and the
 * inbox take clients of `pool` for their own transactions, and one more to LISTEN.
 * @example
 * ```ts
 * const client = await pool.connect();
 * await client.query('BEGIN');
 * await client.query('INSERT INTO orders ...');
 * await outbox.publish(client, { exchange: 'orders', routingKey: 'order.created', body: order });
 * await client.query('COMMIT');
 * ```
 */
export function pgOutboxAdapter(pool: PgPoolLike): OutboxAdapter<PgClientLike> {
  return {
    async execute(client, sql, params) {
      // A pg older than 8.16 cannot tell whether the client is in a transaction: the insert then adds no row, and the
      // outbox refuses it.
      if (isPool(client)) {
        throw new Error(
          'pgOutboxAdapter: this is the pool, not a client in a transaction, so the outbox row would commit on its own; take a client (pool.connect()), call BEGIN on it, and publish on it',
        );
      }
      if (transactionStatusOf(client) === 'I') {
        throw new Error(
          'pgOutboxAdapter: this client is not in a transaction, so the outbox row would commit on its own; call BEGIN on it first (and COMMIT after your own writes)',
        );
      }
      return client.query(sql, [...params]) as Promise<SqlResult>;
    },
    refusesAbortedCommit: true,
    async transaction(work) {
      const client = await pool.connect();
      // The connection may fail while the transaction is idle (the relay awaits the broker): pg then emits 'error' on
      // the client, which would end the process without a listener. The client is then destroyed, not reused.
      let broken: Error | undefined;
      const onError = (error: Error) => void (broken ??= error);
      client.on('error', onError);
      try {
        await client.query('BEGIN');
        try {
          const result = await work(client);
          // PostgreSQL answers the COMMIT of a transaction a failed statement aborted with ROLLBACK, without an error.
          // (The client's transaction status is no substitute: it is updated only after the failed query's callback.)
          const { command } = (await client.query('COMMIT')) as { command?: string };
          if (command === 'ROLLBACK') throw abortedTransactionError();
          return result;
        } catch (error) {
          // A call abandoned at its time limit may still hold this client and query on it. A ROLLBACK would queue behind
          // its running statement, and its next statement behind the ROLLBACK, committing alone: the client is
          // destroyed at once instead (the server rolls back a closed connection's transaction), and its late
          // statements fail.
          if (isTimeout(error)) broken ??= error;
          else await client.query('ROLLBACK').catch((rollback: Error) => void (broken ??= rollback));
          throw error;
        }
      } catch (error) {
        if (broken === undefined && isConnectionError(error)) broken = error as Error;
        throw error;
      } finally {
        client.removeListener?.('error', onError);
        client.release(broken);
      }
    },
    maxConnections: () => (typeof pool.options?.max === 'number' ? pool.options.max : undefined),
    async listen(channel, onNotify, onLost) {
      const client = await pool.connect();
      return listenOn(client, channel, onNotify, onLost, (error) => client.release(error));
    },
  };
}

/** The pg client a LISTEN runs on: a pool's, or the one TypeORM's query runner holds. */
export interface ListeningClient {
  query(sql: string): Promise<unknown>;
  on(event: 'notification' | 'error', listener: (value: { channel?: string } & Error) => void): unknown;
  removeListener?(event: string, listener: (value: { channel?: string } & Error) => void): unknown;
}

/**
 * LISTENs on `client` for NOTIFYs on `channel` until the returned function is called (UNLISTEN, its listeners removed,
 * the connection given back by `release`). A connection error gives the connection back broken (`release(error)`), then
 * calls `onLost`; a failed LISTEN gives it back broken and rejects, without `onLost`.
 */
export async function listenOn(
  client: ListeningClient,
  channel: string,
  onNotify: () => void,
  onLost: (error: Error) => void,
  release: (error?: Error) => unknown,
): Promise<() => Promise<void>> {
  let closed = false;
  const onNotification = (message: { channel?: string }) => message.channel === channel && onNotify();
  const onError = (error: Error) => {
    if (closed) return;
    closed = true;
    void release(error);
    onLost(error);
  };
  client.on('notification', onNotification);
  client.on('error', onError);
  try {
    await client.query(`LISTEN "${channel}"`);
  } catch (error) {
    closed = true;
    await release(error as Error);
    throw error;
  }
  return async () => {
    if (closed) return;
    closed = true;
    await client.query(`UNLISTEN "${channel}"`).catch(() => undefined);
    client.removeListener?.('notification', onNotification);
    client.removeListener?.('error', onError);
    await release();
  };
}

/** A connection's failure (class 08, or the server shutting it down), as pg reports it on BEGIN or COMMIT. */
function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && (code.startsWith('08') || code.startsWith('57P'));
}

/** A pg Pool passed where a client belongs: it counts its clients, and has no release. */
function isPool(client: PgClientLike): boolean {
  const counted = client as unknown as { totalCount?: unknown; release?: unknown };
  return typeof counted.totalCount === 'number' && typeof counted.release !== 'function';
}

/** What the client says of its transaction ('I', 'T', 'E'), or undefined when it cannot tell (an older pg, pg-native). */
function transactionStatusOf(client: PgClientLike): string | null | undefined {
  try {
    return client.getTransactionStatus?.();
  } catch {
    return undefined;
  }
}
