import type { Duration } from '../time/duration.reader.js';

/**
 * A circuit breaker on a handler queue (README "Outage protection"): when the handler's calls keep failing, the
 * queue stops being consumed for a while, so that its messages wait in the broker instead of burning their retries.
 * Errors that say the message is bad (`NonRetryableError`, the `nonRetryable` classes, malformed bodies) never count,
 * nor does the failure of a message that failed before (attempt 2 and later: a bad message fails every time); a trial
 * of such a message that fails frees its place for another, up to `consecutiveFailures` in a row. A call that fails
 * once its delivery was lost (its signal aborted: a lost connection, the shutdown timeout) does not count either.
 * @example { failureRate: 0.5, minimumCalls: 20, window: '30s', openFor: '10s', maxOpenFor: '5m' }
 */
export interface CircuitBreakerOptions {
  /** Opens when at least this share (0 < rate <= 1) of the counted calls in `window` failed. Default 0.5. */
  failureRate?: number;
  /** ...and at least this many calls were counted in `window`. Default 20. */
  minimumCalls?: number;
  /** The sliding window over which the failure rate is taken. Default '30s'. */
  window?: Duration;
  /**
   * Also opens after this many counted failures in a row, however long the window: a total outage of a busy queue
   * is noticed after this many calls, not after `window`'s worth of them. Default: `minimumCalls`.
   */
  consecutiveFailures?: number;
  /** How long the breaker stays open the first time; each failed trial doubles it, up to `maxOpenFor`. Default '5s'. */
  openFor?: Duration;
  /** The longest open time. Default '1m'. */
  maxOpenFor?: Duration;
  /** Messages let through (the prefetch) while half-open; all must succeed to close. Default 1. */
  halfOpenCalls?: number;
  /**
   * Whether a retryable error counts as an outage (default: every one does). Not asked for errors that park the
   * message (non-retryable, malformed): those never count. A predicate that throws counts the error.
   */
  countsAsFailure?: (error: unknown) => boolean;
}

/**
 * At most `calls` handler calls per `per` in this process (a token bucket), for a dependency with a quota. Deliveries
 * over the limit wait unacked in the consumer, within `prefetch`.
 * @example { calls: 50, per: '1s' }
 */
export interface RateLimitOptions {
  /** Handler calls allowed in each `per`. */
  calls: number;
  /** The period: milliseconds or a duration ('1s'). */
  per: Duration;
  /**
   * How many calls may go at once after a quiet time (the bucket's size), 1 to `calls`. With 1, calls are evenly
   * spaced, one every `per / calls`, so no stretch of `per` ever holds more than `calls`; a larger burst answers sooner
   * after a quiet time, but a stretch of `per` may then hold up to `calls + burst - 1`. Default: the calls of 10 ms, at
   * least 1 (so 1 for any limit up to 100 a second; 10 for 1,000 a second): a timer cannot space calls closer than
   * it fires on time, and a bucket of 1 would cap a fast limit at a few hundred calls a second.
   */
  burst?: number;
}
