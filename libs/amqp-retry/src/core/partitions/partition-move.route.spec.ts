import { FirstFailureHeader } from '../headers/header.names.js';
import type { MessageProperties } from 'amqplib';
import { movedProperties, movedRoutingKey } from './partition-move.route.js';

const delivered = { exchange: '', routingKey: 'accounts.p5.retry.1s' };
const rejected = { queue: 'accounts.p5', reason: 'rejected', count: 1, exchange: 'bank', 'routing-keys': ['account.event'] };
const expired = { queue: 'accounts.p5.retry.1s', reason: 'expired', count: 1, exchange: 'accounts.p5.dlx', 'routing-keys': ['accounts.p5.retry.1s'] };

describe('movedRoutingKey', () => {
  it('keeps the key of a message that never failed', () => {
    const fields = { exchange: 'bank', routingKey: 'account.event' };
    expect(movedRoutingKey({ properties: { headers: {} }, fields }, 'accounts.p5')).toBe('account.event');
  });

  it("gives a retry back from its tier the publisher's key, not the tier's", () => {
    const headers = { 'x-death': [expired, rejected] };
    expect(movedRoutingKey({ properties: { headers }, fields: delivered }, 'accounts.p5')).toBe('account.event');
  });

  it("gives a first failure moved into a pattern's own tier the key it was published with", () => {
    const headers = {
      'x-death': [{ ...expired, queue: 'accounts.p5.retry.100ms' }],
      [FirstFailureHeader.queue]: 'accounts.p5',
      [FirstFailureHeader.exchange]: 'bank',
      [FirstFailureHeader.routingKey]: 'account.audit',
    };
    expect(movedRoutingKey({ properties: { headers }, fields: delivered }, 'accounts.p5')).toBe('account.audit');
  });

  it("reads only the leaving queue's history, and keeps the delivered key when x-death cannot be read", () => {
    const headers = { 'x-death': [expired, rejected] };
    expect(movedRoutingKey({ properties: { headers }, fields: delivered }, 'accounts.p2')).toBe(delivered.routingKey);
    expect(movedRoutingKey({ properties: { headers: { 'x-death': 'forged' } }, fields: delivered }, 'accounts.p5')).toBe(delivered.routingKey);
    expect(movedRoutingKey({ properties: {}, fields: delivered }, 'accounts.p5')).toBe(delivered.routingKey);
  });
});

describe('movedProperties', () => {
  it("keeps a moved message's properties and headers, persistent, without another user's userId or the old queue's delivery counts", () => {
    const properties = {
      messageId: 'm-1',
      headers: { 'x-key': 'a', 'x-delivery-count': 4, 'x-acquired-count': 6 },
      userId: 'billing',
      expiration: '60000',
      deliveryMode: 1,
    } as unknown as MessageProperties;
    const moved = movedProperties(properties);
    expect(moved).toMatchObject({ messageId: 'm-1', headers: { 'x-key': 'a' }, expiration: '60000', persistent: true });
    expect(moved.userId).toBeUndefined();
    expect(moved.headers).toEqual({ 'x-key': 'a' }); // the counts of the queue it leaves stay behind
  });
});
