import { refuseShorter, requireFunction, RetryConfigError } from '../../errors/retry-config.error.js';
import { type DurationRange, readDuration, readInteger, readNumber, showValue } from '../config/config.readers.js';
import type { CircuitBreakerOptions, RateLimitOptions } from './breaker.options.js';
import { keysOf, refuseUnknownKeys } from '../config/option-keys.js';

/** A circuit breaker after defaults and validation (see CircuitBreakerOptions). */
export interface CircuitBreakerConfig {
  failureRate: number;
  minimumCalls: number;
  windowMs: number;
  consecutiveFailures: number;
  openForMs: number;
  maxOpenForMs: number;
  halfOpenCalls: number;
  countsAsFailure?: (error: unknown) => boolean;
}

/** A rate limit after validation: `calls` tokens refilled evenly over `perMs`, at most `burst` kept. */
export interface RateLimitConfig {
  calls: number;
  perMs: number;
  burst: number;
}

/** How late a timer may fire, for the default size of a rate limit's bucket (defaultBurst). */
export const RATE_TIMER_SLACK_MS = 10;

export const BREAKER_DEFAULTS = {
  failureRate: 0.5,
  minimumCalls: 20,
  windowMs: 30_000,
  openForMs: 5_000,
  maxOpenForMs: 60_000,
  halfOpenCalls: 1,
} as const;

/** Windows and open times: at least 100 ms (a shorter one is no protection), at most a day (longer is a pause). */
const BREAKER_TIME_RANGE: DurationRange = {
  min: 100,
  below: 'shorter than 100 ms is no protection',
  belowFix: 'Use at least 100ms',
  max: 86_400_000,
  above: 'a day (to stop a queue for longer, pause it)',
};
const RATE_PERIOD_RANGE: DurationRange = {
  min: 1,
  below: 'a rate needs a period',
  belowFix: 'Use a period above 0',
  max: 86_400_000,
  above: 'a day',
};
const KEYS = keysOf<CircuitBreakerOptions>({
  failureRate: 1,
  minimumCalls: 1,
  window: 1,
  consecutiveFailures: 1,
  openFor: 1,
  maxOpenFor: 1,
  halfOpenCalls: 1,
  countsAsFailure: 1,
});
const RATE_LIMIT_KEYS = keysOf<RateLimitOptions>({ calls: 1, per: 1, burst: 1 });

/** Reads `circuitBreaker` of the module or a handler: `true` (the defaults), `false` or absent (off), or options. */
export function readCircuitBreaker(value: unknown, at: (key: string) => string): CircuitBreakerConfig | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return readCircuitBreaker({}, at);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RetryConfigError(at('circuitBreaker'), `is ${showValue(value)}`, "Use true, false, or { failureRate: 0.5, openFor: '10s' }.");
  }
  refuseUnknownKeys(value, KEYS, 'circuitBreaker', at, 'the circuit breaker');
  const options = value as CircuitBreakerOptions;
  const key = (k: string) => at(`circuitBreaker.${k}`);
  const failureRate = readNumber(options.failureRate, key('failureRate'), 0, 1, '0.5', BREAKER_DEFAULTS.failureRate);
  if (failureRate === 0)
    throw new RetryConfigError(key('failureRate'), 'is 0: every queue would open', 'Use a share above 0 and at most 1, e.g. 0.5.');
  const minimumCalls = readInteger(options.minimumCalls, key('minimumCalls'), 1, 1_000_000, '20', BREAKER_DEFAULTS.minimumCalls);
  const consecutiveFailures = readInteger(options.consecutiveFailures, key('consecutiveFailures'), 1, 1_000_000, '20', minimumCalls);
  const windowMs = readDuration(options.window, key('window'), "'30s'", BREAKER_TIME_RANGE, BREAKER_DEFAULTS.windowMs);
  const openForMs = readDuration(options.openFor, key('openFor'), "'10s'", BREAKER_TIME_RANGE, BREAKER_DEFAULTS.openForMs);
  const longestOpen = Math.max(openForMs, BREAKER_DEFAULTS.maxOpenForMs);
  const maxOpenForMs = readDuration(options.maxOpenFor, key('maxOpenFor'), "'5m'", BREAKER_TIME_RANGE, longestOpen);
  refuseShorter(key('maxOpenFor'), maxOpenForMs, 'openFor', openForMs, 'Make it at least openFor, or leave it out.');
  const halfOpenCalls = readInteger(options.halfOpenCalls, key('halfOpenCalls'), 1, 65_535, '1', BREAKER_DEFAULTS.halfOpenCalls);
  requireFunction(options.countsAsFailure, key('countsAsFailure'), 'Give (error) => boolean, e.g. (error) => !(error instanceof NotFoundError).');
  const { countsAsFailure } = options;
  return { failureRate, minimumCalls, windowMs, consecutiveFailures, openForMs, maxOpenForMs, halfOpenCalls, countsAsFailure };
}

/** Reads `rateLimit` of the module or a handler: absent or false (none), or `{ calls, per }`. */
export function readRateLimit(value: unknown, at: (key: string) => string): RateLimitConfig | undefined {
  if (value === undefined || value === false) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RetryConfigError(at('rateLimit'), `is ${showValue(value)}`, "Give { calls, per }, e.g. { calls: 50, per: '1s' }.");
  }
  refuseUnknownKeys(value, RATE_LIMIT_KEYS, 'rateLimit', at, 'the rate limit');
  const options = value as Partial<RateLimitOptions>;
  const calls = readInteger(options.calls, at('rateLimit.calls'), 1, 1_000_000, '50');
  const perMs = readDuration(options.per, at('rateLimit.per'), "'1s'", RATE_PERIOD_RANGE);
  const burst = readInteger(options.burst, at('rateLimit.burst'), 1, calls, '1', defaultBurst(calls, perMs));
  return { calls, perMs, burst };
}

/**
 * The bucket's size when none is given: the calls of RATE_TIMER_SLACK_MS, at least 1. A bucket of one caps the rate
 * at what a late Node timer delivers (about 700 calls a second, measured); this size lets a late timer catch up.
 */
export const defaultBurst = (calls: number, perMs: number): number => Math.min(calls, Math.max(1, Math.floor((calls * RATE_TIMER_SLACK_MS) / perMs)));
