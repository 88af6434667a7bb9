import type { Duration } from '../time/duration.reader.js';
import type { MessageKeyFn } from '../message/message-key.reader.js';
import type { OutboxAdapter } from './outbox.adapter.js';

/**
 * The transactional outbox (docs/outbox.md): `OutboxPublisher.publish(tx, message)` writes the message in your
 * transaction, and a relay in each instance publishes committed rows with confirms.
 * @example { adapter: pgOutboxAdapter(pool) }
 */
export interface OutboxOptions<Tx = unknown> {
  /** How the library reaches PostgreSQL: pgOutboxAdapter(pool), typeormOutboxAdapter(dataSource), or your own. */
  adapter: OutboxAdapter<Tx>;
  /** The outbox table; default 'amqp_retry_outbox'. Letters, digits and _. With the schema, it names the NOTIFY channel. */
  table?: string;
  /** Its schema; default the connection's search path. */
  schema?: string;
  /**
   * true (default): the tables are created at start-up if missing (safe with instances starting at once). false: you
   * run the migration yourself (libs/amqp-retry/migrations/, or `outboxMigration()`), and the start fails if it is missing.
   */
  createTables?: boolean;
  /** Whether this instance runs a relay; default true. Turn it off in processes that only write. */
  relay?: boolean;
  /** Rows claimed per round; default 100. */
  batchSize?: number;
  /**
   * Rounds the relay runs at once, each in a transaction (and a pool client) of its own: one claims what just
   * committed while another waits for the broker's confirms. Default 2. Order keys hold whatever the number.
   */
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
  /** Publishes in a row of a row no queue takes (returned as unroutable) before it is parked; default 10. */
  maxUnroutableAttempts?: number;
}

/**
 * The transactional inbox of a handler (docs/outbox.md): the handler runs inside a transaction it is handed as
 * `context.transaction`; the message is recorded as handled in that same transaction, which commits before the ack.
 * A copy already recorded is acked without running.
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
  /**
   * Names a message: default its AMQP message id (OutboxPublisher and RetryPublisher always set one). A message
   * without one is parked as malformed: give a function for publishers that set none.
   */
  key?: MessageKeyFn;
  /** How long handled ids are kept; a copy arriving later runs again. Default '7d'. */
  retention?: Duration;
}

/**
 * A handler's own inbox: InboxOptions whose `adapter` may be left out to use the module's inbox adapter, else its
 * outbox adapter (the one `RetryModule.forRootAsync` made from an injected `DataSource`), e.g. for a table of its own.
 * @example @RetryWithBackoff({ queue: 'billing', inbox: { table: 'billing_inbox' } }) // the module's adapter
 */
export interface HandlerInboxOptions<Tx = unknown> extends Omit<InboxOptions<Tx>, 'adapter'> {
  /** The database; default the module's inbox adapter (RetryModuleOptions.inbox), else its outbox adapter. */
  adapter?: OutboxAdapter<Tx>;
}
