import { reconnectDelay, type ReconnectPolicy } from '../connection/reconnect.policy.js';

/** What became of one publish of a row, as the relay saw it. */
export type PublishVerdict =
  | { kind: 'sent' }
  /** It would fail again the same way: the broker refused it (404, 403, 406), or it cannot be sent as it is. */
  | { kind: 'refused'; reason: string }
  /** Returned: no queue is bound for its routing key, perhaps not yet. Tried again, parked after `maxUnroutableAttempts`. */
  | { kind: 'unroutable'; reason: string }
  /** Anything else: the broker away or blocking, no confirm in time, a nack. Tried again with backoff, for ever. */
  | { kind: 'transient'; reason: string };

/** Reply codes of a channel closed over this publish that mean "never": ACCESS_REFUSED, NOT_FOUND, PRECONDITION_FAILED. */
const PERMANENT_CODES = new Set([403, 404, 406]);

/**
 * Classifies a failed publish by its broker reply code (PublishError.brokerCode) and its message.
 * @example classifyPublishFailure({ brokerCode: 404, message: "...no exchange 'x'..." }) // { kind: 'refused', ... }
 */
export function classifyPublishFailure(error: unknown): Exclude<PublishVerdict, { kind: 'sent' }> {
  const { brokerCode, message } = (typeof error === 'object' && error !== null ? error : {}) as { brokerCode?: unknown; message?: unknown };
  const reason = typeof message === 'string' ? message : String(error);
  if (typeof brokerCode === 'number' && PERMANENT_CODES.has(brokerCode)) return { kind: 'refused', reason };
  if (/returned as unroutable/.test(reason)) return { kind: 'unroutable', reason };
  // Never sendable as it is: amqplib cannot encode it, the engine refuses a delay or property, or delayed delivery is off.
  const name = (error as { name?: unknown } | undefined)?.name;
  const invalid = name === 'RangeError' || (name === 'TypeError' && reason.startsWith('Invalid '));
  if (/amqplib could not send it|Delayed delivery is off/.test(reason) || invalid) return { kind: 'refused', reason };
  return { kind: 'transient', reason };
}

/** How the relay retries: the backoff between publishes of one row, and how often an unroutable row is tried. */
export interface OutboxRetryPolicy {
  backoff: ReconnectPolicy;
  /** Publishes of an unroutable row before it is parked. */
  maxUnroutableAttempts: number;
}

/** What to write to a row after a publish. */
export type RowChange =
  | { state: 'sent' }
  | { state: 'pending'; attempts: number; retryInMs: number; error: string }
  | { state: 'parked'; attempts: number; reason: string };

/**
 * The row's next state after the publish of attempt `attempts + 1` (always from 'pending').
 * @example nextRowChange(0, { kind: 'transient', reason: 'down' }, policy) // { state: 'pending', attempts: 1, retryInMs: ~1000, ... }
 */
export function nextRowChange(attempts: number, verdict: PublishVerdict, policy: OutboxRetryPolicy, random?: () => number): RowChange {
  const made = attempts + 1;
  switch (verdict.kind) {
    case 'sent':
      return { state: 'sent' };
    case 'refused':
      return { state: 'parked', attempts: made, reason: `refused by the broker: ${verdict.reason}` };
    case 'unroutable':
      if (made >= policy.maxUnroutableAttempts) {
        return { state: 'parked', attempts: made, reason: `unroutable after ${made} attempts: ${verdict.reason}` };
      }
      return { state: 'pending', attempts: made, retryInMs: reconnectDelay(made, policy.backoff, random), error: verdict.reason };
    case 'transient':
      return { state: 'pending', attempts: made, retryInMs: reconnectDelay(made, policy.backoff, random), error: verdict.reason };
  }
}
