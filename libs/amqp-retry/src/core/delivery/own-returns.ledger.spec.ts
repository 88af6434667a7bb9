import type { ConsumeMessage, MessageProperties } from 'amqplib';
import { OwnReturns, returnIdentity } from './own-returns.ledger.js';

const delivery = (messageId: string | undefined, headers: Record<string, unknown> = {}, body = '{"n":1}'): ConsumeMessage => ({
  content: Buffer.from(body),
  fields: { deliveryTag: 1, redelivered: true, exchange: 'shop', routingKey: 'order.created', consumerTag: 'c' },
  properties: { messageId, headers } as MessageProperties,
});

describe('OwnReturns', () => {
  it('counts the returns of each identity, and is empty until the first', () => {
    const returns = new OwnReturns();
    expect(returns.isEmpty).toBe(true);
    returns.add('id:a');
    returns.add('id:a');
    returns.add('id:b');
    expect([returns.isEmpty, returns.of('id:a'), returns.of('id:b'), returns.of('id:c')]).toEqual([false, 2, 1, 0]);
  });

  it('keeps a count through reads, as the broker keeps its own, until the identity is forgotten', () => {
    const returns = new OwnReturns();
    returns.add('id:a');
    expect(returns.of('id:a')).toBe(1);
    returns.add('id:a'); // put back again after it was read
    expect([returns.of('id:a'), returns.of('id:a')]).toEqual([2, 2]);
    returns.forget('id:a'); // its message left the queue: a later copy (a replay) starts from none
    expect([returns.of('id:a'), returns.isEmpty]).toEqual([0, true]);
  });

  it('gives a hand-over note credit to the next delivery of its identity, which takes the larger of it and its own count', () => {
    const returns = new OwnReturns();
    returns.add('id:a');
    returns.credit('id:a', 5); // the message went back and forth: the other owner counted this one's return too
    returns.credit('id:b', 2);
    expect([returns.of('id:a'), returns.of('id:b')]).toEqual([1, 0]); // credits are not counts until claimed
    expect([returns.claim('id:a'), returns.claim('id:b')]).toEqual([5, 2]);
    returns.credit('id:c', 1);
    returns.credit('id:c', 3); // a later note replaces the earlier one's count
    expect(returns.claim('id:c')).toBe(3);
  });

  it('lets a credit serve one delivery only, whatever its outcome: a later copy of the identity starts from none', () => {
    const returns = new OwnReturns();
    returns.credit('id:a', 4);
    expect(returns.claim('id:a')).toBe(4);
    returns.forget('id:a'); // that delivery left the queue
    expect([returns.claim('id:a'), returns.isEmpty]).toEqual([0, true]);
  });

  it('drops a credit no delivery claimed within its lifetime, and is empty again once none is live', () => {
    let now = 1_000;
    const returns = new OwnReturns({ creditLifetimeMs: 60_000, now: () => now });
    returns.credit('id:a', 3); // the message went to another instance: nothing here claims it
    now += 30_000;
    returns.credit('id:b', 2);
    expect(returns.isEmpty).toBe(false);
    now += 30_000; // a's lifetime is over, b's is not
    expect(returns.isEmpty).toBe(false);
    expect([returns.claim('id:a'), returns.of('id:a')]).toEqual([0, 0]);
    now += 30_000;
    expect(returns.isEmpty).toBe(true);
    expect(returns.claim('id:b')).toBe(0);
  });

  it('adds a return on top of a live credit: the next note names the returns of both hand-overs', () => {
    const returns = new OwnReturns();
    returns.credit('id:a', 2);
    returns.add('id:a'); // delivered here, and put back before it was read (a hand-over during a hand-over)
    expect(returns.takeUnannounced()).toEqual([['id:a', 3]]);
  });

  it('hands out the returns made since it last did, with their counts, for the next note; credits are not announced again', () => {
    const returns = new OwnReturns();
    returns.credit('id:a', 4);
    returns.add('id:a');
    returns.add('id:b');
    returns.credit('id:c', 1);
    expect(returns.takeUnannounced()).toEqual([
      ['id:a', 5],
      ['id:b', 1],
    ]);
    expect(returns.takeUnannounced()).toEqual([]);
    returns.add('id:b');
    returns.forget('id:b'); // left the queue: nothing to tell
    expect(returns.takeUnannounced()).toEqual([]);
  });

  it('forgets the least recently returned beyond its capacity', () => {
    const returns = new OwnReturns({ capacity: 2 });
    returns.add('id:a');
    returns.add('id:b');
    returns.add('id:a'); // a is now the most recent
    returns.add('id:c');
    expect([returns.of('id:a'), returns.of('id:b'), returns.of('id:c')]).toEqual([2, 0, 1]);
  });
});

describe('returnIdentity', () => {
  it('is the message id when there is one, whatever the delivery counts say', () => {
    expect(returnIdentity(delivery('m-1'), 'orders')).toBe('id:m-1');
    expect(returnIdentity(delivery('m-1', { 'x-acquired-count': 3 }), 'orders')).toBe('id:m-1');
  });

  it('is a digest that a redelivery keeps (its counts change), and that another body changes', () => {
    const first = returnIdentity(delivery(undefined, { 'x-delivery-count': 1 }), 'orders');
    expect(first).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(returnIdentity(delivery(undefined, { 'x-delivery-count': 2, 'x-acquired-count': 4 }), 'orders')).toBe(first);
    expect(returnIdentity(delivery(undefined, {}, '{"n":2}'), 'orders')).not.toBe(first);
  });

  it('counts a replayed copy apart from its original, and each replay apart from the others', () => {
    const original = returnIdentity(delivery('m-1'), 'orders');
    const replayed = returnIdentity(delivery('m-1', { 'x-replayed-at': '2026-11-30T10:00:00.000Z' }), 'orders');
    const again = returnIdentity(delivery('m-1', { 'x-replayed-at': '2026-11-30T11:00:00.000Z' }), 'orders');
    expect(new Set([original, replayed, again]).size).toBe(3);
    expect(returnIdentity(delivery('m-1', { 'x-replayed-at': '2026-11-30T10:00:00.000Z', 'x-delivery-count': 2 }), 'orders')).toBe(replayed);
  });

  it('reads a malformed death history as none instead of throwing', () => {
    expect(returnIdentity(delivery(undefined, { 'x-death': 'forged' }), 'orders')).toMatch(/^sha256:/);
  });
});
