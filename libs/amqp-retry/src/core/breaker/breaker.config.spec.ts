import { NonRetryableError } from '../../errors/non-retryable.error.js';
import { MalformedMessageError } from '../../errors/malformed-message.error.js';
import { RetryConfigError } from '../../errors/retry-config.error.js';
import { BREAKER_DEFAULTS, readCircuitBreaker, readRateLimit } from './breaker.config.js';
import { countsAsOutage } from './outage.classify.js';

const at = (key: string) => `@RetryWithBackoff option "${key}" of A.b`;

describe('readCircuitBreaker', () => {
  it('is off when absent or false, and takes the defaults for true', () => {
    expect(readCircuitBreaker(undefined, at)).toBeUndefined();
    expect(readCircuitBreaker(false, at)).toBeUndefined();
    expect(readCircuitBreaker(true, at)).toEqual({ ...BREAKER_DEFAULTS, consecutiveFailures: 20, countsAsFailure: undefined });
  });

  it('reads durations with units and defaults consecutiveFailures to minimumCalls', () => {
    expect(readCircuitBreaker({ window: '2s', openFor: '1.5s', maxOpenFor: '1m', minimumCalls: 7 }, at)).toMatchObject({
      windowMs: 2_000,
      openForMs: 1_500,
      maxOpenForMs: 60_000,
      minimumCalls: 7,
      consecutiveFailures: 7,
    });
  });

  it.each([
    [{ failureRate: 0 }, 'circuitBreaker.failureRate" of A.b is 0'],
    [{ failureRate: 1.5 }, 'circuitBreaker.failureRate" of A.b is 1.5'],
    [{ minimumCalls: 0 }, 'circuitBreaker.minimumCalls" of A.b is 0'],
    [{ window: 'soon' }, 'circuitBreaker.window" of A.b has "soon", which is not a duration'],
    [{ openFor: '10ms' }, 'circuitBreaker.openFor" of A.b is 10 ms: shorter than 100 ms is no protection'],
    [{ openFor: '10s', maxOpenFor: '5s' }, 'circuitBreaker.maxOpenFor" of A.b (5000 ms) is shorter than openFor (10000 ms)'],
    [{ maxOpenFor: '2d' }, 'circuitBreaker.maxOpenFor" of A.b has "2d", longer than a day'],
    [{ halfOpenCalls: 0 }, 'circuitBreaker.halfOpenCalls" of A.b is 0'],
    [{ countsAsFailure: 'yes' }, 'circuitBreaker.countsAsFailure" of A.b is not a function'],
    [{ failurerate: 0.5 }, 'circuitBreaker.failurerate" of A.b is not an option of the circuit breaker'],
    ['on', 'option "circuitBreaker" of A.b is "on"'],
  ])('refuses %j, naming the key and the fix', (value, message) => {
    expect(() => readCircuitBreaker(value, at)).toThrow(RetryConfigError);
    expect(() => readCircuitBreaker(value, at)).toThrow(message);
  });
});

describe('readRateLimit', () => {
  it('reads calls per period', () => {
    expect(readRateLimit({ calls: 50, per: '1s' }, at)).toEqual({ calls: 50, perMs: 1_000, burst: 1 });
    expect(readRateLimit({ calls: 50, per: '1s', burst: 50 }, at)).toEqual({ calls: 50, perMs: 1_000, burst: 50 });
    // The default bucket holds the calls of 10 ms (at least 1, at most calls): a timer is not on time to the millisecond.
    expect(readRateLimit({ calls: 100, per: '1s' }, at)?.burst).toBe(1);
    expect(readRateLimit({ calls: 1_000, per: '1s' }, at)?.burst).toBe(10);
    expect(readRateLimit({ calls: 1_000_000, per: '1s' }, at)?.burst).toBe(10_000);
    expect(readRateLimit({ calls: 5, per: '1ms' }, at)?.burst).toBe(5);
    expect(readRateLimit(undefined, at)).toBeUndefined();
  });

  it.each([
    [{ calls: 0, per: '1s' }, 'rateLimit.calls" of A.b is 0. Use a whole number from 1'],
    [{ calls: 5 }, 'rateLimit.per" of A.b has undefined, which is not a duration'],
    [{ calls: 5, per: 0 }, 'rateLimit.per" of A.b is 0 ms: a rate needs a period'],
    [50, 'rateLimit" of A.b is 50. Give { calls, per }'],
    [{ calls: 5, per: '1s', burst: 6 }, 'rateLimit.burst" of A.b is 6. Use a whole number from 1 to 5'],
  ])('refuses %j', (value, message) => {
    expect(() => readRateLimit(value, at)).toThrow(message);
  });
});

describe('countsAsOutage', () => {
  it('counts retryable errors, never non-retryable or malformed ones', () => {
    expect(countsAsOutage(new Error('ECONNREFUSED'), true)).toBe(true);
    expect(countsAsOutage(new NonRetryableError('bad order'), false)).toBe(false);
    expect(countsAsOutage(new Error('a nonRetryable class'), false)).toBe(false);
    expect(countsAsOutage(new MalformedMessageError('no key'), true)).toBe(false);
  });

  it('asks countsAsFailure for retryable errors only, and counts when it throws', () => {
    const notFound = (error: unknown) => !(error instanceof RangeError);
    expect(countsAsOutage(new RangeError('404'), true, notFound)).toBe(false);
    expect(countsAsOutage(new Error('503'), true, notFound)).toBe(true);
    expect(countsAsOutage(new NonRetryableError('x'), false, () => true)).toBe(false);
    const broken = () => {
      throw new Error('bug');
    };
    expect(countsAsOutage(new Error('503'), true, broken)).toBe(true);
  });
});

describe('readPauseBy', () => {
  it('takes printable text, trimmed, and refuses control characters and long text', async () => {
    const { readPauseBy } = await import('./queue.state.js');
    expect(readPauseBy(' alice ', 'payments down')).toEqual({ by: 'alice', reason: 'payments down' });
    expect(readPauseBy('alice', undefined)).toEqual({ by: 'alice' });
    expect(readPauseBy(undefined, 'x')).toEqual({ problem: 'by is missing' });
    expect(readPauseBy('a\u001b[31m', undefined)).toEqual({ problem: 'by must be printable text of 1 to 200 characters' });
    expect(readPauseBy('alice', 'x'.repeat(201))).toEqual({ problem: 'reason must be printable text of 1 to 200 characters' });
    expect(readPauseBy('alice', 42)).toEqual({ problem: 'reason must be printable text of 1 to 200 characters' });
  });
});
