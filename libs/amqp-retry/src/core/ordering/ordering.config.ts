import { RetryConfigError } from '../../errors/retry-config.error.js';
import { type DurationRange, readDuration, refuseIllFormedText, showValue } from '../config/config.readers.js';
import type { OrderingOptions } from '../config/retry.options.js';
import { keysOf, refuseUnknownKeys } from '../config/option-keys.js';
import { MAX_RECORD_TTL_MS } from '../idempotency/idempotency.config.js';
import { headerKey, type MessageKeyFn } from '../message/message-key.reader.js';

/** Ordering after defaults and validation. */
export interface OrderingConfig {
  key: MessageKeyFn;
  whileRetrying: 'continue' | 'hold';
  holdGraceMs: number;
}

export const DEFAULT_HOLD_GRACE_MS = 10_000;
/** A hold may wait as long as an idempotency record may last: a year is longer than any redelivery. */
const HOLD_GRACE_RANGE: DurationRange = { min: 0, max: MAX_RECORD_TTL_MS, above: 'a year' };

const KEYS = keysOf<OrderingOptions>({ key: 1, whileRetrying: 1, holdGrace: 1 });

/** Reads a handler's `ordering`. */
export function readOrdering(value: unknown, at: (key: string) => string): OrderingConfig {
  const options = (typeof value === 'object' && value !== null ? value : {}) as Partial<OrderingOptions>;
  refuseUnknownKeys(options, KEYS, 'ordering', at);
  const key = options.key;
  if (typeof key === 'object' && key !== null) refuseUnknownKeys(key, ['header'], 'ordering.key', at);
  const header = typeof key === 'object' && key !== null ? (key as { header?: unknown }).header : undefined;
  if (typeof key !== 'function' && (typeof header !== 'string' || header === '')) {
    throw new RetryConfigError(
      at('ordering.key'),
      `is ${typeof key === 'object' ? showValue(key) : String(key)}`,
      "Give a function of the payload, e.g. (order) => order.customerId, or a header: { header: 'x-customer-id' }.",
    );
  }
  if (typeof header === 'string') refuseIllFormedText(header, at('ordering.key.header'), "'x-customer-id'");
  const whileRetrying = options.whileRetrying ?? 'continue';
  if (whileRetrying !== 'continue' && whileRetrying !== 'hold') {
    throw new RetryConfigError(at('ordering.whileRetrying'), `is ${showValue(whileRetrying)}`, "Use 'continue' or 'hold'.");
  }
  const holdGraceMs = readDuration(options.holdGrace, at('ordering.holdGrace'), "'10s'", HOLD_GRACE_RANGE, DEFAULT_HOLD_GRACE_MS);
  return { key: typeof key === 'function' ? key : headerKey(header as string), whileRetrying, holdGraceMs };
}
