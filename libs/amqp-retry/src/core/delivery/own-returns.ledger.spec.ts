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

  it('takes the larger count of a hand-over note, which includes the returns it holds itself', () => {
    const returns = new OwnReturns();
    returns.add('id:a');
    returns.credit('id:a', 5); // the message went back and forth: the other owner counted this one's return too
    returns.credit('id:b', 2);
    returns.credit('id:a', 3); // an older note
    expect([returns.of('id:a'), returns.of('id:b')]).toEqual([5, 2]);
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
    const returns = new OwnReturns(2);
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

  it('reads a malformed death history as none instead of throwing', () => {
    expect(returnIdentity(delivery(undefined, { 'x-death': 'forged' }), 'orders')).toMatch(/^sha256:/);
  });
});
