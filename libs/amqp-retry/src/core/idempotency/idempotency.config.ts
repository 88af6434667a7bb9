import { refuseShorter, requireFunction, requireMethods, RetryConfigError } from '../../errors/retry-config.error.js';
import { type DurationRange, readDuration } from '../config/config.readers.js';
import type { IdempotencyStore } from './idempotency.store.js';
import { messageIdKey, type MessageKeyFn } from '../message/message-key.reader.js';
import type { IdempotencyOptions } from '../config/retry.options.js';
import { keysOf, refuseUnknownKeys } from '../config/option-keys.js';

/** Idempotency after defaults and validation. */
export interface IdempotencyConfig {
  store: IdempotencyStore;
  key: MessageKeyFn;
  /** True when the key is the message id (no key function given): a missing id is named in the park reason. */
  keyIsMessageId: boolean;
  ttlMs: number;
  claimTtlMs: number;
}

export const DEFAULT_IDEMPOTENCY_TTL_MS = 86_400_000;
export const DEFAULT_CLAIM_TTL_MS = 30_000;
/** Records, holds and retentions: Redis PX and PostgreSQL intervals take far more; a year is longer than any redelivery. */
export const UP_TO_A_YEAR: DurationRange = { max: 366 * 86_400_000, above: 'a year' };
/** Records that must last: idempotency records, inbox records. */
export const RECORD_TTL_RANGE: DurationRange = { ...UP_TO_A_YEAR, min: 1, below: 'a record must last' };
/** A claim renewed every third of its life needs a life long enough for a store round trip. */
const CLAIM_TTL_RANGE: DurationRange = {
  ...RECORD_TTL_RANGE,
  min: 1_000,
  below: 'a claim is renewed every third of its life, which must leave time for a round trip to the store',
};
const KEYS = keysOf<IdempotencyOptions>({ store: 1, key: 1, ttl: 1, claimTtl: 1 });
const STORE_METHODS = ['claim', 'renew', 'release', 'markHandled'] as const;
const STORE_FIX = 'Give a RedisIdempotencyStore, a PostgresIdempotencyStore, or an object implementing IdempotencyStore.';

/** Reads `idempotency` of the module or of a handler; `at(key)` names an option as the user wrote it. */
export function readIdempotency(value: unknown, at: (key: string) => string): IdempotencyConfig {
  if (typeof value !== 'object' || value === null) {
    throw new RetryConfigError(at('idempotency'), `is ${String(value)}`, 'Give { store }, e.g. { store: new RedisIdempotencyStore({ url }) }.');
  }
  refuseUnknownKeys(value, KEYS, 'idempotency', at);
  const options = value as Partial<IdempotencyOptions>;
  requireMethods(options.store, STORE_METHODS, at('idempotency.store'), STORE_FIX);
  requireFunction(options.key, at('idempotency.key'), 'Give (payload, message) => string, e.g. (order) => order.id.');
  const claimTtlMs = readDuration(options.claimTtl, at('idempotency.claimTtl'), "'30s'", CLAIM_TTL_RANGE, DEFAULT_CLAIM_TTL_MS);
  const ttlMs = readDuration(options.ttl, at('idempotency.ttl'), "'1d'", RECORD_TTL_RANGE, DEFAULT_IDEMPOTENCY_TTL_MS);
  const fix = 'Keep handled keys at least as long as a claim lasts, or a late copy of a message handled a moment ago runs again.';
  refuseShorter(at('idempotency.ttl'), ttlMs, 'claimTtl', claimTtlMs, fix);
  return { store: options.store as IdempotencyStore, key: options.key ?? messageIdKey, keyIsMessageId: options.key === undefined, ttlMs, claimTtlMs };
}

/** The distinct stores of some handlers, to close once at shutdown. */
export const idempotencyStoresOf = (configs: ReadonlyArray<{ idempotency?: IdempotencyConfig }>) => [
  ...new Set(configs.flatMap((c) => (c.idempotency ? [c.idempotency.store] : []))),
];
