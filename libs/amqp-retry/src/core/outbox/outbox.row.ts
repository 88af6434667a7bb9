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
  /** Publishes of an unroutable row in a row (each returned) before it is parked. */
  maxUnroutableAttempts: number;
}

/** What to write to a row after a publish. */
export type RowChange =
  | { state: 'sent' }
  | { state: 'pending'; attempts: number; retryInMs: number; error: string }
  | { state: 'parked'; attempts: number; reason: string };

/** Marks an unroutable row's `last_error` with how many of its publishes in a row were returned. */
const unroutableMark = (streak: number) => `[unroutable ${streak}] `;

/** How many publishes of a row in a row were returned unroutable, read from its last error; 0 after any other. */
export function unroutableStreak(lastError: string | null | undefined): number {
  const streak = lastError?.match(/^\[unroutable (\d+)\] /)?.[1];
  return streak === undefined ? 0 : Number(streak);
}

/** What the relay read of a row before its publish: its publishes so far, and why the last one failed. */
export interface RowBefore {
  attempts: number;
  lastError?: string | null;
}

/**
 * The row's next state after its publish (always from 'pending'). An unroutable row is parked after
 * `maxUnroutableAttempts` returns in a row: publishes that failed otherwise before (the broker away) do not count.
 * @example nextRowChange({ attempts: 0 }, { kind: 'transient', reason: 'down' }, policy) // { state: 'pending', attempts: 1, retryInMs: ~1000, ... }
 */
export function nextRowChange(row: RowBefore, verdict: PublishVerdict, policy: OutboxRetryPolicy, random?: () => number): RowChange {
  const made = row.attempts + 1;
  if (verdict.kind === 'sent') return { state: 'sent' };
  if (verdict.kind === 'refused') return { state: 'parked', attempts: made, reason: `refused by the broker: ${verdict.reason}` };
  let error = verdict.reason;
  if (verdict.kind === 'unroutable') {
    const streak = unroutableStreak(row.lastError) + 1;
    if (streak >= policy.maxUnroutableAttempts) return { state: 'parked', attempts: made, reason: `unroutable after ${streak} attempts: ${error}` };
    error = `${unroutableMark(streak)}${error}`; // returns left: tried again after the backoff
  }
  return { state: 'pending', attempts: made, retryInMs: reconnectDelay(made, policy.backoff, random), error };
}

/** What a failed publish may have taken (its confirm's wait), in publishFailureStands. */
const PUBLISH_ALLOWANCE_MS = 60_000;

/**
 * Whether a relay's publish failure (health: "cannot publish") still stands at `now`. A row that failed is tried again
 * within the backoff's longest wait and a poll: when no publish failed for twice that and a publish's time, another
 * relay sent the rows this one could not, and nothing is left here to fail on.
 */
export const publishFailureStands = (failedAt: number, now: number, retry: OutboxRetryPolicy, pollIntervalMs: number): boolean =>
  now - failedAt <= 2 * (retry.backoff.maxDelayMs + pollIntervalMs) + PUBLISH_ALLOWANCE_MS;
