import { describe, expect, it } from '@jest/globals';
import { firstFailureHeaders } from './first-failure.headers.js';
import { retryIdentity, retryOwner, type IdentifiedDelivery } from './retry.identity.js';
import type { XDeath } from './x-death.parser.js';

const queue = 'orders';
const content = Buffer.from('{"key":"k","seq":3}');
const properties = { contentType: 'application/json', correlationId: 'c-1', timestamp: 1_700_000_000, headers: { tenant: 'acme' } };

/** The first delivery, as published to `orders.x` with `order.created`. */
const first: IdentifiedDelivery = { fields: { exchange: 'orders.x', routingKey: 'order.created' }, properties, content };

const rejected = (count: number): XDeath => ({ queue, reason: 'rejected', count, exchange: 'orders.x', routingKeys: ['order.created', 'cc.audit'] });
const expired = (tier: number): XDeath => ({
  queue: `${queue}.retry.${tier}`,
  reason: 'expired',
  count: 1,
  exchange: `${queue}.dlx`,
  routingKeys: ['order.created'],
});

/** A copy back from tier `tier`, as the broker delivers it: keyed by the tier, through the return exchange, with its deaths. */
function retried(tier: number, extra: Record<string, unknown> = {}): { message: IdentifiedDelivery; deaths: XDeath[] } {
  const deaths = [rejected(tier), expired(tier)];
  const headers = { ...properties.headers, 'x-death': deaths, 'x-first-death-queue': queue, 'x-delivery-count': tier };
  return {
    message: {
      fields: { exchange: `${queue}.return`, routingKey: `${queue}.after.${tier}` },
      properties: { ...properties, ...extra, headers },
      content,
    },
    deaths,
  };
}

describe('retryIdentity', () => {
  const identity = retryIdentity(first, [], queue);

  it('is the same for the first delivery and every retried copy, though the tiers rewrite its key and exchange', () => {
    for (const tier of [1, 2, 3]) {
      const { message, deaths } = retried(tier);
      expect(retryIdentity(message, deaths, queue)).toBe(identity);
    }
  });

  it('ignores what dead-lettering or a moved copy changes: expiration, userId, deliveryMode, headers', () => {
    const { message, deaths } = retried(1, { expiration: undefined, userId: 'other', deliveryMode: 2 });
    const published = { ...properties, expiration: '5000', userId: 'me', deliveryMode: 1 };
    expect(retryIdentity({ ...first, properties: published }, [], queue)).toBe(identity);
    expect(retryIdentity(message, deaths, queue)).toBe(identity);
  });

  it('is the same for a first failure the library moved into a tier by publishing (a transport pattern with its own schedule)', () => {
    const headers = firstFailureHeaders(properties.headers, queue, first.fields);
    const deaths = [expired(1)];
    const moved: IdentifiedDelivery = {
      fields: { exchange: `${queue}.return`, routingKey: `${queue}.after.1` },
      properties: { ...properties, headers: { ...headers, 'x-death': deaths } },
      content,
    };
    expect(retryIdentity(moved, deaths, queue)).toBe(identity);
  });

  it('differs with the body, the first route or a stable property', () => {
    const others: IdentifiedDelivery[] = [
      { ...first, content: Buffer.from('{"key":"k","seq":4}') },
      { ...first, fields: { ...first.fields, routingKey: 'order.updated' } },
      { ...first, fields: { ...first.fields, exchange: 'billing' } },
      { ...first, properties: { ...properties, correlationId: 'c-2' } },
      { ...first, properties: { ...properties, timestamp: 1_700_000_001 } },
      { ...first, properties: { ...properties, type: 'x' } },
      { ...first, properties: { ...properties, correlationId: undefined } },
      { ...first, properties: { ...properties, correlationId: '' } },
    ];
    const identities = new Set(others.map((m) => retryIdentity(m, [], queue)));
    expect(identities.size).toBe(others.length);
    expect(identities.has(identity)).toBe(false);
  });

  it('is the message id when there is one, whatever else changes', () => {
    const a = retryIdentity({ ...first, properties: { ...properties, messageId: 'm-1' } }, [], queue);
    const { message, deaths } = retried(2, { messageId: 'm-1' });
    expect(a).toBe('id:m-1');
    expect(retryIdentity({ ...message, content: Buffer.from('changed') }, deaths, queue)).toBe('id:m-1');
    expect(retryIdentity({ ...first, properties: { ...properties, messageId: '' } }, [], queue)).toBe(identity); // empty: no id
  });

  it("does not take another queue's rejection for this queue's first route", () => {
    const foreign: XDeath = { queue: 'elsewhere', reason: 'rejected', count: 1, exchange: 'other.x', routingKeys: ['other.key'] };
    expect(retryIdentity(first, [foreign], queue)).toBe(identity);
  });
});

describe('retryOwner', () => {
  it('names the identity at an attempt: a hold waits for the next attempt, not for a new message alike', () => {
    expect(retryOwner('id:m-1', 2)).toBe('id:m-1#2');
    expect(retryOwner('id:m-1', 1)).not.toBe(retryOwner('id:m-1', 2));
  });
});
