import { PublishError } from '../../errors/publish.error.js';
import { classifyPublishFailure, nextRowChange, publishFailureStands, unroutableStreak, type OutboxRetryPolicy } from './outbox.row.js';

const policy: OutboxRetryPolicy = { backoff: { initialDelayMs: 500, maxDelayMs: 30_000, jitter: 0 }, maxUnroutableAttempts: 3 };

describe('classifyPublishFailure', () => {
  it('a missing exchange (404) and a forbidden one (403) are refused for good', () => {
    const missing = new PublishError('nope', 'k', "the broker closed the channel over it (NOT_FOUND - no exchange 'nope' in vhost '/')", 404);
    expect(classifyPublishFailure(missing)).toEqual({ kind: 'refused', reason: missing.message });
    expect(classifyPublishFailure(new PublishError('x', 'k', 'ACCESS_REFUSED', 403)).kind).toBe('refused');
  });

  it("a message over the broker's max_message_size (406, the close over it) is refused for good", () => {
    const reason = 'the broker closed the channel over it (PRECONDITION_FAILED - message size 9437184 is larger than configured max size 8388608)';
    expect(classifyPublishFailure(new PublishError('x', 'k', reason, 406))).toMatchObject({ kind: 'refused' });
  });

  it('properties the engine refuses are refused for good; another TypeError passes', () => {
    expect(classifyPublishFailure(new TypeError('Invalid type (a number): give a string of at most 255 bytes.')).kind).toBe('refused');
    expect(classifyPublishFailure(new TypeError("Cannot read properties of undefined (reading 'x')")).kind).toBe('transient');
  });

  it('a message that cannot be sent as it is is refused: amqplib cannot encode it, an invalid delay, delays off', () => {
    expect(classifyPublishFailure(new PublishError('x', 'k', 'amqplib could not send it: frame size exceeded')).kind).toBe('refused');
    expect(classifyPublishFailure(new RangeError('Invalid delay "x"')).kind).toBe('refused');
    expect(classifyPublishFailure(new Error('Delayed delivery is off (RetryModule option delayedDelivery: false)')).kind).toBe('refused');
  });

  it('a message no queue took is unroutable', () => {
    const returned = new PublishError('x', 'k', 'no queue is bound to receive it (returned as unroutable)');
    expect(classifyPublishFailure(returned).kind).toBe('unroutable');
  });

  it('anything else passes: the broker away, a confirm timeout, other codes, odd values', () => {
    expect(classifyPublishFailure(new PublishError('x', 'k', 'the connection is down')).kind).toBe('transient');
    expect(classifyPublishFailure(new PublishError('x', 'k', 'internal', 541)).kind).toBe('transient');
    expect(classifyPublishFailure(new Error('timeout'))).toEqual({ kind: 'transient', reason: 'timeout' });
    expect(classifyPublishFailure('weird')).toEqual({ kind: 'transient', reason: 'weird' });
    expect(classifyPublishFailure(undefined).kind).toBe('transient');
  });
});

describe('nextRowChange', () => {
  it('a confirmed row is sent', () => {
    expect(nextRowChange({ attempts: 4 }, { kind: 'sent' }, policy)).toEqual({ state: 'sent' });
  });

  it('a refused row is parked at once with the reason', () => {
    expect(nextRowChange({ attempts: 0 }, { kind: 'refused', reason: 'no exchange' }, policy)).toEqual({
      state: 'parked',
      attempts: 1,
      reason: 'refused by the broker: no exchange',
    });
  });

  it('a transient failure waits with capped exponential backoff, for ever', () => {
    const waits = [0, 1, 2, 3, 10, 1000].map((attempts) => nextRowChange({ attempts }, { kind: 'transient', reason: 'down' }, policy));
    expect(waits.map((c) => (c.state === 'pending' ? c.retryInMs : -1))).toEqual([500, 1000, 2000, 4000, 30_000, 30_000]);
    expect(waits[5]).toMatchObject({ state: 'pending', attempts: 1001, error: 'down' });
  });

  it('backoff has jitter within 20% by default', () => {
    const jittered = { ...policy, backoff: { initialDelayMs: 1000, maxDelayMs: 1000 } };
    expect(nextRowChange({ attempts: 0 }, { kind: 'transient', reason: '' }, jittered, () => 0)).toMatchObject({ retryInMs: 800 });
    expect(nextRowChange({ attempts: 0 }, { kind: 'transient', reason: '' }, jittered, () => 0.999)).toMatchObject({ retryInMs: 1000 });
  });

  it('an unroutable row is tried maxUnroutableAttempts times, then parked', () => {
    const unroutable = { kind: 'unroutable', reason: 'r' } as const;
    const first = nextRowChange({ attempts: 0 }, unroutable, policy);
    expect(first).toMatchObject({ state: 'pending', attempts: 1, error: '[unroutable 1] r' });
    const second = nextRowChange({ attempts: 1, lastError: first.state === 'pending' ? first.error : null }, unroutable, policy);
    expect(second).toMatchObject({ state: 'pending', attempts: 2, error: '[unroutable 2] r' });
    expect(nextRowChange({ attempts: 2, lastError: second.state === 'pending' ? second.error : null }, unroutable, policy)).toEqual({
      state: 'parked',
      attempts: 3,
      reason: 'unroutable after 3 attempts: r',
    });
  });

  it('counts only the returns in a row: publishes that failed while the broker was away do not bring the park closer', () => {
    const unroutable = { kind: 'unroutable', reason: 'r' } as const;
    expect(nextRowChange({ attempts: 12, lastError: 'the broker is away' }, unroutable, policy)).toMatchObject({ state: 'pending', attempts: 13 });
    expect(nextRowChange({ attempts: 13, lastError: '[unroutable 1] r' }, { kind: 'transient', reason: 'down' }, policy)).toMatchObject({
      error: 'down',
    });
    expect(unroutableStreak('[unroutable 2] no queue is bound')).toBe(2);
    expect(unroutableStreak(null)).toBe(0);
    expect(unroutableStreak('unroutable 2')).toBe(0);
  });
});

describe('publishFailureStands', () => {
  const retry: OutboxRetryPolicy = { backoff: { initialDelayMs: 500, maxDelayMs: 30_000 }, maxUnroutableAttempts: 10 };

  it('holds while a failing row would have been tried again, and lapses once none failed for twice that and a publish', () => {
    const window = 2 * (30_000 + 1_000) + 60_000;
    expect(publishFailureStands(1_000, 1_000, retry, 1_000)).toBe(true);
    expect(publishFailureStands(1_000, 1_000 + window, retry, 1_000)).toBe(true);
    expect(publishFailureStands(1_000, 1_001 + window, retry, 1_000)).toBe(false);
  });
});
