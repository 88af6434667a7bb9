import { decideDeadLetter } from './dead-letter.decision.js';

const death = (queue: string, reason: string, extra: Record<string, unknown> = {}) => ({
  queue,
  reason,
  count: 1,
  exchange: 'shop',
  'routing-keys': ['order.created'],
  ...extra,
});
const headers = (first: [string, string], last?: [string, string], deaths: unknown[] = []) => ({
  'x-first-death-queue': first[0],
  'x-first-death-reason': first[1],
  ...(last ? { 'x-last-death-queue': last[0], 'x-last-death-reason': last[1] } : {}),
  'x-death': deaths,
});

describe('decideDeadLetter', () => {
  it('parks a message that expired in the queue as expired, naming its own expiration', () => {
    const outcome = decideDeadLetter(
      headers(['orders', 'expired'], undefined, [death('orders', 'expired', { 'original-expiration': '300' })]),
      'orders',
      'park',
    );
    expect(outcome).toMatchObject({ action: 'park', reason: 'expired', handlerCalls: 0 });
    expect(outcome.action === 'park' && outcome.error.message).toBe('expired in "orders" before a handler took it (its expiration of 300 ms)');
  });

  it("names the queue's message TTL when the message had no expiration of its own", () => {
    const outcome = decideDeadLetter(headers(['orders', 'expired'], undefined, [death('orders', 'expired')]), 'orders', 'park');
    expect(outcome.action === 'park' && outcome.error.message).toContain("the queue's message TTL");
  });

  it('parks a message pushed out by the length limit as maxlen, and counts the handler calls it had', () => {
    const deaths = [death('orders', 'maxlen'), death('orders', 'rejected', { count: 2 })];
    expect(decideDeadLetter(headers(['orders', 'rejected'], ['orders', 'maxlen'], deaths), 'orders', 'park')).toMatchObject({
      action: 'park',
      reason: 'maxlen',
      handlerCalls: 2,
    });
  });

  it("drops expired and pushed-out messages with onExpired: 'drop'", () => {
    const expired = headers(['orders', 'expired'], undefined, [death('orders', 'expired')]);
    const maxlen = headers(['orders', 'maxlen'], undefined, [death('orders', 'maxlen')]);
    expect(decideDeadLetter(expired, 'orders', 'drop')).toEqual({ action: 'drop', reason: 'expired', handlerCalls: 0 });
    expect(decideDeadLetter(maxlen, 'orders', 'drop')).toEqual({ action: 'drop', reason: 'maxlen', handlerCalls: 0 });
  });

  it("parks a message past a quorum queue's delivery limit as redelivery-limit, even with onExpired: 'drop'", () => {
    const limit = headers(['orders', 'delivery_limit'], undefined, [death('orders', 'delivery_limit')]);
    expect(decideDeadLetter(limit, 'orders', 'drop')).toMatchObject({ action: 'park', reason: 'redelivery-limit' });
  });

  it('prefers the last death (RabbitMQ 3.13+) over a first death elsewhere', () => {
    const deaths = [death('orders', 'maxlen'), death('upstream', 'expired')];
    expect(decideDeadLetter(headers(['upstream', 'expired'], ['orders', 'maxlen'], deaths), 'orders', 'park')).toMatchObject({ reason: 'maxlen' });
  });

  it('parks as malformed a message whose death headers name a death its x-death does not hold (published with it)', () => {
    const forged = headers(['orders', 'expired'], undefined, [death('orders', 'rejected')]);
    const outcome = decideDeadLetter(forged, 'orders', 'drop');
    expect(outcome).toMatchObject({ action: 'park', reason: 'malformed', handlerCalls: 1 });
    expect(outcome.action === 'park' && outcome.error.message).toContain('not written by the broker');
    expect(decideDeadLetter(headers(['orders', 'maxlen'], undefined, 'junk' as never), 'orders', 'park')).toMatchObject({ reason: 'malformed' });
  });

  it('parks as malformed what reached the queue without a death in the handler queue', () => {
    expect(decideDeadLetter(undefined, 'orders', 'park')).toMatchObject({ action: 'park', reason: 'malformed' });
    expect(decideDeadLetter(headers(['other', 'expired']), 'orders', 'drop')).toMatchObject({ action: 'park', reason: 'malformed' });
    expect(decideDeadLetter({ 'x-first-death-queue': 'orders', 'x-first-death-reason': 7 }, 'orders', 'park')).toMatchObject({ reason: 'malformed' });
  });
});

describe('decideDeadLetter on an expiry', () => {
  it("names the expiration the broker kept in the queue's own expiry entry, not another queue's", () => {
    const deaths = [death('other', 'expired', { 'original-expiration': '5' }), death('orders', 'expired', { 'original-expiration': '300' })];
    const outcome = decideDeadLetter(headers(['orders', 'expired'], undefined, deaths), 'orders', 'park');
    expect(outcome.action === 'park' && outcome.error.message).toBe('expired in "orders" before a handler took it (its expiration of 300 ms)');
  });
});

describe('decideDeadLetter on a message that expired in the queue once and was moved back into it', () => {
  const expiredThenRejected = [death('orders', 'rejected'), death('orders', 'expired')];

  it('sends its next first failure on to tier 1, even with onExpired: drop, as RabbitMQ 3.10 writes it (the new death first)', () => {
    const moved = headers(['orders', 'expired'], undefined, expiredThenRejected);
    expect(decideDeadLetter(moved, 'orders', 'drop')).toEqual({ action: 'retry', handlerCalls: 1 });
    expect(decideDeadLetter(moved, 'orders', 'park')).toEqual({ action: 'retry', handlerCalls: 1 });
  });

  it('sends it on to tier 1 when the last death (RabbitMQ 3.13+) is a rejection in the queue', () => {
    const moved = headers(['orders', 'expired'], ['orders', 'rejected'], expiredThenRejected);
    expect(decideDeadLetter(moved, 'orders', 'park')).toEqual({ action: 'retry', handlerCalls: 1 });
  });

  it('still parks it as expired when it expired again: its newest death is the expiry', () => {
    const again = headers(['orders', 'expired'], undefined, [death('orders', 'expired', { count: 2 }), death('orders', 'rejected')]);
    expect(decideDeadLetter(again, 'orders', 'park')).toMatchObject({ action: 'park', reason: 'expired', handlerCalls: 1 });
    expect(decideDeadLetter(headers(['orders', 'expired'], ['orders', 'expired'], expiredThenRejected), 'orders', 'drop')).toMatchObject({
      action: 'drop',
    });
  });

  it('takes no message for such a failure that failed here before, or whose first death the sort does not take', () => {
    const retried = headers(['orders', 'expired'], undefined, [death('orders', 'rejected', { count: 2 }), death('orders', 'expired')]);
    expect(decideDeadLetter(retried, 'orders', 'drop')).toMatchObject({ action: 'drop', reason: 'expired' });
    const shovelledTier = headers(['orders', 'rejected'], undefined, [death('orders', 'rejected', { count: 3 }), death('orders.retry.3', 'expired')]);
    expect(decideDeadLetter(shovelledTier, 'orders', 'park')).toMatchObject({ action: 'park', reason: 'malformed' });
    const claimsOnlyARejection = { 'x-last-death-queue': 'orders', 'x-last-death-reason': 'rejected' };
    expect(decideDeadLetter(claimsOnlyARejection, 'orders', 'park')).toMatchObject({ action: 'park', reason: 'malformed' });
    const firstRejectedHere = headers(['orders', 'rejected'], ['orders', 'rejected'], [death('orders', 'rejected')]);
    expect(decideDeadLetter(firstRejectedHere, 'orders', 'park')).toMatchObject({ action: 'park', reason: 'malformed' });
  });

  it('does not take a rejection in another queue for a first failure here', () => {
    const elsewhere = headers(['orders', 'expired'], undefined, [death('billing', 'rejected'), death('orders', 'expired')]);
    expect(decideDeadLetter(elsewhere, 'orders', 'park')).toMatchObject({ action: 'park', reason: 'expired' });
  });
});
