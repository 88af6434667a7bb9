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
