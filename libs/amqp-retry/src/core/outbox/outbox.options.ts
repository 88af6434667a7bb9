import type { Duration } from '../time/duration.reader.js';
import type { MessageKeyFn } from '../message/message-key.reader.js';
import type { OutboxAdapter } from './outbox.adapter.js';

/**
 * The transactional outbox (docs/outbox.md): `OutboxPublisher.publish(tx, message)` writes in your transaction, and a
 * relay publishes committed rows with confirms.
 * @example { adapter: pgOutboxAdapter(pool) }
 */
export interface OutboxOptions<Tx = unknown> {
  /** How the library reaches PostgreSQL: pgOutboxAdapter(pool), typeormOutboxAdapter(dataSource), or your own. */
  adapter: OutboxAdapter<Tx>;
  /** The outbox table (also the NOTIFY channel); default 'amqp_retry_outbox'. Letters, digits and _. */
  table?: string;
  /** Its schema; default the connection's search path. */
  schema?: string;
  /** Create missing tables at start-up (default true); false: run the migration yourself (`outboxMigration()`). */
  createTables?: boolean;
  /** Whether this instance runs a relay; default true. Turn it off in processes that only write. */
  relay?: boolean;
  /** Rows claimed per round; default 100. */
  batchSize?: number;
  /** Rounds the relay runs at once, each in a transaction of its own, so that one claims while another awaits confirms. Default 2. */
  concurrency?: number;
  /** How often the relay looks for rows without a NOTIFY (the fallback); default '1s'. */
  pollInterval?: Duration;
  /** How long sent rows are kept before they are deleted; default '1d'. 0 deletes them at the next cleanup. */
  retention?: Duration;
  /** Backoff between publishes of a row the broker did not take (away, blocked); default '500ms' doubling to '30s'. */
  retryDelay?: {
    /** The first wait; default '500ms'. */
    initial?: Duration;
    /** The longest wait; default '30s'. */
    max?: Duration;
  };
  /** Publishes of a row no queue takes (returned as unroutable) before it is parked; default 10. */
  maxUnroutableAttempts?: number;
}

/**
 * The transactional inbox of a handler (docs/outbox.md): the handler runs in `context.transaction`, which records the
 * message as handled and commits before the ack; a copy already recorded is acked without running.
 * @example @RetryWithBackoff({ queue: 'payments', inbox: { adapter: pgOutboxAdapter(pool) } })
 */
export interface InboxOptions<Tx = unknown> {
  /** The database: pgOutboxAdapter, typeormOutboxAdapter, or an OutboxAdapter of your own. */
  adapter: OutboxAdapter<Tx>;
  /** The inbox table; default 'amqp_retry_inbox'. */
  table?: string;
  /** Its schema; default the connection's search path. */
  schema?: string;
  /** As OutboxOptions.createTables; default true. */
  createTables?: boolean;
  /** Names a message: default its AMQP message id; a message without a key is parked as malformed. */
  key?: MessageKeyFn;
  /** How long handled ids are kept; a copy arriving later runs again. Default '7d'. */
  retention?: Duration;
}

/**
 * A handler's own inbox: InboxOptions whose `adapter` defaults to the module's inbox adapter, else its outbox adapter.
 * @example @RetryWithBackoff({ queue: 'billing', inbox: { table: 'billing_inbox' } }) // the module's adapter
 */
export interface HandlerInboxOptions<Tx = unknown> extends Omit<InboxOptions<Tx>, 'adapter'> {
  /** The database; default the module's inbox adapter (RetryModuleOptions.inbox), else its outbox adapter. */
  adapter?: OutboxAdapter<Tx>;
}
