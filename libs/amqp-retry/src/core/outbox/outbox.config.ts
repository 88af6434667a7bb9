import { refuseShorter, requireFunction, requireMethods, RetryConfigError } from '../../errors/retry-config.error.js';
import { readDuration, readFlag, readInteger, type DurationRange, showValue } from '../config/config.readers.js';
import { messageIdKey, type MessageKeyFn } from '../message/message-key.reader.js';
import { readSqlIdentifier } from '../sql/sql-identifier.reader.js';
import { RECORD_TTL_RANGE, UP_TO_A_YEAR } from '../idempotency/idempotency.config.js';
import type { OutboxAdapter } from './outbox.adapter.js';
import type { HandlerInboxOptions, InboxOptions, OutboxOptions } from './outbox.options.js';
import { keysOf, refuseUnknownKeys } from '../config/option-keys.js';
import type { OutboxRetryPolicy } from './outbox.row.js';
import { outboxSql, type OutboxStatements } from './outbox.sql.js';

export const DEFAULT_OUTBOX_TABLE = 'amqp_retry_outbox';
export const DEFAULT_INBOX_TABLE = 'amqp_retry_inbox';

/** The outbox after defaults and validation. */
export interface OutboxConfig {
  adapter: OutboxAdapter;
  sql: OutboxStatements;
  /** For messages: the table as written, "schema.table". */
  tableName: string;
  createTables: boolean;
  relay: boolean;
  batchSize: number;
  /** Rounds a relay runs at once. */
  concurrency: number;
  pollIntervalMs: number;
  retentionMs: number;
  retry: OutboxRetryPolicy;
}

/** A handler's inbox after defaults and validation. */
export interface InboxConfig extends Pick<OutboxConfig, 'adapter' | 'sql' | 'tableName' | 'createTables' | 'retentionMs'> {
  key: MessageKeyFn;
  keyIsMessageId: boolean;
}

const OUTBOX_KEYS = keysOf<OutboxOptions>({
  adapter: 1,
  table: 1,
  schema: 1,
  createTables: 1,
  relay: 1,
  batchSize: 1,
  concurrency: 1,
  pollInterval: 1,
  retention: 1,
  retryDelay: 1,
  maxUnroutableAttempts: 1,
});
const RETRY_DELAY_KEYS = keysOf<NonNullable<OutboxOptions['retryDelay']>>({ initial: 1, max: 1 });
const INBOX_KEYS = keysOf<InboxOptions & HandlerInboxOptions>({ adapter: 1, table: 1, schema: 1, createTables: 1, key: 1, retention: 1 });
const ADAPTER_METHODS = ['execute', 'transaction'] as const;
const UP_TO_AN_HOUR: DurationRange = { max: 3_600_000, above: 'an hour' };
const POLL_RANGE: DurationRange = { ...UP_TO_AN_HOUR, min: 10, below: 'a relay polling more often than every 10 ms only loads the database' };
const RETRY_RANGE: DurationRange = { ...UP_TO_AN_HOUR, min: 10, below: 'a relay retrying faster than every 10 ms loops hot' };

function readAdapter(adapter: unknown, at: (key: string) => string, orModuleInbox = false): OutboxAdapter {
  const orModule =
    orModuleInbox && adapter === undefined
      ? ", or give the module an inbox or an outbox (RetryModule's inbox: { adapter } or outbox: { adapter }), whose adapter it then uses"
      : '';
  const fix = `Give pgOutboxAdapter(pool), typeormOutboxAdapter(dataSource), or an object implementing OutboxAdapter (docs/outbox.md)${orModule}.`;
  requireMethods(adapter, ADAPTER_METHODS, at('adapter'), fix);
  requireFunction((adapter as Partial<OutboxAdapter>).listen, at('adapter.listen'), 'Leave it out (the relay then polls) or implement it.');
  return adapter as OutboxAdapter;
}

function objectOf(value: unknown, key: string, example: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new RetryConfigError(key, `is ${showValue(value)}`, `Give ${example}.`);
  return value as Record<string, unknown>;
}

/** Reads the module's `outbox`; `at(key)` names an option as the user wrote it. */
export function readOutbox(value: unknown, at: (key: string) => string): OutboxConfig {
  const given = objectOf(value, at('outbox'), '{ adapter: pgOutboxAdapter(pool) }');
  refuseUnknownKeys(given, OUTBOX_KEYS, 'outbox', at);
  const options = given as Partial<OutboxOptions>;
  const adapter = readAdapter(options.adapter, (k) => at(`outbox.${k}`));
  const table = options.table === undefined ? DEFAULT_OUTBOX_TABLE : readSqlIdentifier(options.table, at('outbox.table'));
  const schema = options.schema === undefined ? undefined : readSqlIdentifier(options.schema, at('outbox.schema'));
  const retry = options.retryDelay === undefined ? {} : objectOf(options.retryDelay, at('outbox.retryDelay'), "{ initial: '500ms', max: '30s' }");
  refuseUnknownKeys(retry, RETRY_DELAY_KEYS, 'outbox.retryDelay', at);
  const initialDelayMs = readDuration(retry.initial, at('outbox.retryDelay.initial'), "'500ms'", RETRY_RANGE, 500);
  const maxDelayMs = readDuration(retry.max, at('outbox.retryDelay.max'), "'30s'", RETRY_RANGE, Math.max(initialDelayMs, 30_000));
  refuseShorter(at('outbox.retryDelay.max'), maxDelayMs, 'initial', initialDelayMs, 'Make max at least initial.');
  return {
    adapter,
    sql: outboxSql({ table, inboxTable: DEFAULT_INBOX_TABLE, schema }),
    tableName: schema === undefined ? table : `${schema}.${table}`,
    createTables: readFlag(options.createTables, at('outbox.createTables'), true),
    relay: readFlag(options.relay, at('outbox.relay'), true),
    batchSize: readInteger(options.batchSize, at('outbox.batchSize'), 1, 10_000, '100', 100),
    concurrency: readInteger(options.concurrency, at('outbox.concurrency'), 1, 64, '2', 2),
    pollIntervalMs: readDuration(options.pollInterval, at('outbox.pollInterval'), "'1s'", POLL_RANGE, 1_000),
    retentionMs: readDuration(options.retention, at('outbox.retention'), "'1d'", UP_TO_A_YEAR, 86_400_000),
    retry: {
      backoff: { initialDelayMs, maxDelayMs },
      maxUnroutableAttempts: readInteger(options.maxUnroutableAttempts, at('outbox.maxUnroutableAttempts'), 1, 1_000_000, '10', 10),
    },
  };
}

/** Reads a handler's (or the module's) `inbox`. */
export function readInbox(value: unknown, at: (key: string) => string, forHandler?: { moduleAdapter?: OutboxAdapter }): InboxConfig {
  const given = objectOf(value, at('inbox'), '{ adapter: pgOutboxAdapter(pool) }');
  refuseUnknownKeys(given, INBOX_KEYS, 'inbox', at);
  const options = given as Partial<InboxOptions>;
  // A handler's inbox without an adapter of its own uses the module's (made from an injected DataSource, say).
  const inherited = options.adapter === undefined ? forHandler?.moduleAdapter : undefined;
  const adapter = inherited ?? readAdapter(options.adapter, (k) => at(`inbox.${k}`), forHandler !== undefined);
  const table = options.table === undefined ? DEFAULT_INBOX_TABLE : readSqlIdentifier(options.table, at('inbox.table'));
  const schema = options.schema === undefined ? undefined : readSqlIdentifier(options.schema, at('inbox.schema'));
  requireFunction(options.key, at('inbox.key'), 'Give (payload, message) => string, e.g. (order) => order.id.');
  return {
    adapter,
    sql: outboxSql({ table: DEFAULT_OUTBOX_TABLE, inboxTable: table, schema }),
    tableName: schema === undefined ? table : `${schema}.${table}`,
    createTables: readFlag(options.createTables, at('inbox.createTables'), true),
    key: options.key ?? messageIdKey,
    keyIsMessageId: options.key === undefined,
    retentionMs: readDuration(options.retention, at('inbox.retention'), "'7d'", RECORD_TTL_RANGE, 7 * 86_400_000),
  };
}
