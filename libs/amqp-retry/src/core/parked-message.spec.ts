import type { MessageProperties } from 'amqplib';
import { MAX_EXCEPTION_STACK_BYTES, parkedPublishOptions, truncateUtf8, type ParkInput } from './parked-message.js';
import { parseXDeath } from './x-death.parser.js';

const properties = (over: Partial<MessageProperties> = {}): MessageProperties => ({
  contentType: 'application/json',
  contentEncoding: undefined,
  headers: { tenant: 'acme' },
  deliveryMode: 2,
  priority: 3,
  correlationId: 'c-1',
  replyTo: undefined,
  expiration: undefined,
  messageId: 'm-1',
  timestamp: 1_700_000_000,
  type: 'order.created',
  userId: undefined,
  appId: 'shop',
  clusterId: undefined,
  ...over,
});

const input = (over: Partial<ParkInput> = {}): ParkInput => ({
  reason: 'exhausted',
  error: new Error('payment declined'),
  handlerCalls: 4,
  queue: 'orders',
  deaths: parseXDeath([
    { queue: 'orders.retry.1', reason: 'expired', count: 3, exchange: 'orders.dlx', 'routing-keys': ['x'] },
    { queue: 'orders', reason: 'rejected', count: 3, exchange: 'shop', 'routing-keys': ['order.created'] },
  ]),
  deliveredExchange: 'orders.return',
  deliveredRoutingKey: 'orders.after.3',
  properties: properties(),
  now: new Date('2026-01-02T03:04:05.678Z'),
  ...over,
});

describe('parkedPublishOptions', () => {
  it('keeps the properties and headers and adds the parking headers', () => {
    const options = parkedPublishOptions(input());
    expect(options).toMatchObject({
      contentType: 'application/json',
      persistent: true,
      priority: 3,
      correlationId: 'c-1',
      messageId: 'm-1',
      timestamp: 1_700_000_000,
      type: 'order.created',
      appId: 'shop',
    });
    expect(options.headers).toMatchObject({
      tenant: 'acme',
      'x-parked-reason': 'exhausted',
      'x-exception-message': 'payment declined',
      'x-original-exchange': 'shop',
      'x-original-routing-key': 'order.created',
      'x-retry-attempts': 4,
      'x-parked-at': '2026-01-02T03:04:05.678Z',
    });
    expect(options.headers?.['x-exception-stack']).toMatch(/^Error: payment declined\n\s+at /);
  });

  it('takes exchange and key from the delivery when the message never failed before', () => {
    const options = parkedPublishOptions(input({ deaths: [], deliveredExchange: 'shop', deliveredRoutingKey: 'order.paid', reason: 'malformed' }));
    expect(options.headers).toMatchObject({ 'x-original-exchange': 'shop', 'x-original-routing-key': 'order.paid', 'x-parked-reason': 'malformed' });
  });

  it('describes a thrown non-Error', () => {
    const options = parkedPublishOptions(input({ error: 'plain string' }));
    expect(options.headers).toMatchObject({ 'x-exception-message': 'plain string', 'x-exception-stack': 'plain string' });
  });

  it('drops expiration and userId so the copy can neither expire nor be refused, keeping them as headers', () => {
    const options = parkedPublishOptions(input({ properties: properties({ expiration: '60000', userId: 'billing' }) }));
    expect(options.expiration).toBeUndefined();
    expect(options.userId).toBeUndefined();
    expect(options.headers).toMatchObject({ 'x-original-expiration': '60000', 'x-original-user-id': 'billing' });
  });

  it('truncates a huge stack to the header budget', () => {
    const error = new Error('deep');
    error.stack = 'x'.repeat(100_000);
    const stack = parkedPublishOptions(input({ error })).headers?.['x-exception-stack'] as string;
    expect(Buffer.byteLength(stack)).toBeLessThanOrEqual(MAX_EXCEPTION_STACK_BYTES);
    expect(stack.endsWith('... [truncated]')).toBe(true);
  });
});

describe('truncateUtf8', () => {
  it('leaves short text alone', () => {
    expect(truncateUtf8('héllo', 100)).toBe('héllo');
  });

  it('never splits a multi-byte character', () => {
    const cut = truncateUtf8('€'.repeat(100), 40);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(40);
    expect(cut).toMatch(/^€+\.\.\. \[truncated\]$/);
  });
});
