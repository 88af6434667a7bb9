import { NonRetryableError } from '../errors/non-retryable.error.js';
import { decideAfterFailure, decideBeforeHandling, QUORUM_DELIVERY_LIMIT, REDELIVERY_LIMIT, retryabilityOf } from './delivery.decision.js';

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('decideBeforeHandling', () => {
  it('hands the parsed body to the handler', () => {
    expect(decideBeforeHandling(json({ id: 7 }), 1, 3)).toEqual({ action: 'handle', payload: { id: 7 } });
  });

  it.each([['{"id": 7'], [''], ['undefined'], ['\u00ff\u00fe']])('parks %p as malformed without a handler call', (body) => {
    const decision = decideBeforeHandling(Buffer.from(body), 1, 3);
    expect(decision).toMatchObject({ action: 'park', reason: 'malformed', handlerCalls: 0 });
    expect(decision.action === 'park' && decision.error.message).toMatch(/^body is not valid JSON: /);
  });

  it('parks as exhausted a message that already had every attempt', () => {
    expect(decideBeforeHandling(json(1), 5, 3)).toMatchObject({ action: 'park', reason: 'exhausted', handlerCalls: 4 });
  });

  it('parks a message delivered REDELIVERY_LIMIT times without being settled, without calling the handler', () => {
    expect(decideBeforeHandling(json(1), 2, 5, REDELIVERY_LIMIT - 1)).toEqual({ action: 'handle', payload: 1 });
    const decision = decideBeforeHandling(json(1), 2, 5, REDELIVERY_LIMIT);
    expect(decision).toMatchObject({ action: 'park', reason: 'redelivery-limit', handlerCalls: 1 + REDELIVERY_LIMIT });
    expect(decision.action === 'park' && decision.error.message).toBe('delivered 10 times without being settled: the handler may crash its process');
  });

  it('acts before the broker does: its delivery limit is higher', () => {
    expect(QUORUM_DELIVERY_LIMIT).toBeGreaterThan(REDELIVERY_LIMIT);
  });

  it('still handles the last attempt', () => {
    expect(decideBeforeHandling(json(1), 3, 3)).toEqual({ action: 'handle', payload: 1 });
  });
});

describe('decideAfterFailure', () => {
  it('retries in the tier of the attempt, the last tier repeating', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => decideAfterFailure(attempt, 6, true, 3))).toEqual([
      { action: 'retry', tier: 1 },
      { action: 'retry', tier: 2 },
      { action: 'retry', tier: 3 },
      { action: 'retry', tier: 3 },
      { action: 'retry', tier: 3 },
    ]);
  });

  it('parks as exhausted on the last attempt', () => {
    expect(decideAfterFailure(4, 4, true, 3)).toEqual({ action: 'park', reason: 'exhausted' });
    expect(decideAfterFailure(1, 1, true, 3)).toEqual({ action: 'park', reason: 'exhausted' });
  });

  it('parks a non-retryable error at once', () => {
    expect(decideAfterFailure(1, 4, false, 3)).toEqual({ action: 'park', reason: 'non-retryable' });
  });
});

describe('retryabilityOf', () => {
  class Declined extends Error {}
  class Timeout extends Error {}

  it('treats NonRetryableError as non-retryable whatever the option', () => {
    expect(retryabilityOf()(new NonRetryableError('no'))).toBe(false);
    expect(retryabilityOf(() => false)(new NonRetryableError('no'))).toBe(false);
  });

  it('matches classes with instanceof, subclasses included', () => {
    class HardDeclined extends Declined {}
    const retryable = retryabilityOf([Declined]);
    expect(retryable(new Declined())).toBe(false);
    expect(retryable(new HardDeclined())).toBe(false);
    expect(retryable(new Timeout())).toBe(true);
    expect(retryable('a string')).toBe(true);
  });

  it('uses a predicate', () => {
    const retryable = retryabilityOf((e) => e instanceof Error && e.message.startsWith('4'));
    expect(retryable(new Error('404'))).toBe(false);
    expect(retryable(new Error('503'))).toBe(true);
  });

  it('retries when the predicate itself throws', () => {
    const retryable = retryabilityOf(() => {
      throw new Error('bug');
    });
    expect(retryable(new Error('x'))).toBe(true);
  });
});
