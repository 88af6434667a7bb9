import { RetryConfigError } from '../../errors/retry-config.error.js';
import { readDuration, refuseIllFormedText, showValue } from '../config/config.readers.js';
import type { OrderingOptions } from '../config/retry.options.js';
import { keysOf, refuseUnknownKeys } from '../config/option-keys.js';
import { UP_TO_A_YEAR } from '../idempotency/idempotency.config.js';
import { headerKey, type MessageKeyFn } from '../message/message-key.reader.js';

/** Ordering after defaults and validation. */
export interface OrderingConfig {
  key: MessageKeyFn;
  whileRetrying: 'continue' | 'hold';
  holdGraceMs: number;
}

export const DEFAULT_HOLD_GRACE_MS = 10_000;

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
  const holdGraceMs = readDuration(options.holdGrace, at('ordering.holdGrace'), "'10s'", UP_TO_A_YEAR, DEFAULT_HOLD_GRACE_MS);
  return { key: typeof key === 'function' ? key : headerKey(header as string), whileRetrying, holdGraceMs };
}
