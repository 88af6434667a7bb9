import { RetryConfigError } from '../../errors/retry-config.error.js';
import { isWellFormedText, showValue } from './config.readers.js';
import { assertDistinctQueues, resolveHandlerConfig } from './handler.config.js';
import { resolveModuleConfig } from './module.config.js';
import type { RetryHandlerOptions, RetryModuleOptions } from './retry.options.js';

const moduleConfig = resolveModuleConfig();
const handler = (options: Record<string, unknown>) =>
  resolveHandlerConfig({ queue: 'orders', ...options } as RetryHandlerOptions, moduleConfig, 'Orders.handle');
const module = (options: Record<string, unknown>) => resolveModuleConfig(options as RetryModuleOptions, {});
const handlerKey = (key: string) => `Invalid retry configuration: @RetryWithBackoff option "${key}" of Orders.handle`;
const moduleKey = (key: string) => `Invalid retry configuration: RetryModule option "${key}"`;

/** Half of the surrogate pair of an emoji: what is left of a name cut through one. */
const HALF = '\uD83D';

/** Runs `read`, expecting a RetryConfigError; returns its message. */
function refusal(read: () => unknown): string {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(RetryConfigError);
    return (error as Error).message;
  }
  throw new Error('was accepted');
}

describe('names that are not well-formed UTF-16', () => {
  it('tells a lone surrogate from a whole pair', () => {
    expect(isWellFormedText('orders.😀')).toBe(true);
    expect(isWellFormedText(`orders${HALF}`)).toBe(false);
    expect(isWellFormedText('orders\uDE00x')).toBe(false);
  });

  it.each<[string, () => unknown, string]>([
    ['queue', () => handler({ queue: `orders${HALF}` }), handlerKey('queue')],
    ['errorQueue', () => handler({ errorQueue: `orders.error${HALF}` }), handlerKey('errorQueue')],
    ['exchange', () => handler({ exchange: `orders${HALF}` }), handlerKey('exchange')],
    ['routingKey', () => handler({ routingKey: ['order.created', `order.${HALF}`] }), handlerKey('routingKey')],
    ['partitions.key.header', () => handler({ partitions: { count: 2, key: { header: `x-account${HALF}` } } }), handlerKey('partitions.key.header')],
    ['ordering.key.header', () => handler({ ordering: { key: { header: `x-customer${HALF}` } } }), handlerKey('ordering.key.header')],
    ['delayedDelivery.prefix', () => module({ delayedDelivery: { prefix: `billing.delay${HALF}` } }), moduleKey('delayedDelivery.prefix')],
    ['connectionName', () => module({ connectionName: `orders${HALF}` }), moduleKey('connectionName')],
    ['application', () => module({ application: `orders${HALF}` }), moduleKey('application')],
  ])('refuses %s holding a lone surrogate, naming the key and the fix', (_key, read, key) => {
    const message = refusal(read);
    expect(message.startsWith(key)).toBe(true);
    expect(message).toContain('half of a UTF-16 surrogate pair');
    expect(message).toContain('Give the whole character or leave it out');
  });

  it('takes names with characters outside the BMP when whole', () => {
    expect(handler({ queue: 'orders.😀', errorQueue: 'orders.😀.error', routingKey: 'order.😀' }).queue).toBe('orders.😀');
    expect(module({ delayedDelivery: { prefix: 'billing.😀' }, connectionName: 'orders 😀' }).delayPrefix).toBe('billing.😀');
  });
});

describe('lists with holes', () => {
  // eslint-disable-next-line no-sparse-arrays -- the hole is the case
  const sparse = ['200ms', , '1s'];
  // eslint-disable-next-line no-sparse-arrays -- the hole is the case
  const sparseUrls = ['amqp://a:5672', , 'amqp://b:5672'];

  it.each<[string, () => unknown, string]>([
    ['handler delays with a hole', () => handler({ delays: sparse }), `${handlerKey('delays')} has no delay at index 1`],
    ['handler delays of new Array(2)', () => handler({ delays: new Array(2) }), `${handlerKey('delays')} has no delay at index 0`],
    ['module delays with a hole', () => module({ delays: sparse }), `${moduleKey('delays')} has no delay at index 1`],
    ['urls with a hole', () => module({ urls: sparseUrls }), `${moduleKey('urls')} has no URL at index 1`],
  ])('refuses %s, naming the key, the position and the fix', (_case, read, start) => {
    const message = refusal(read);
    expect(message.startsWith(start)).toBe(true);
    expect(message).toContain('Give a');
    expect(message).toContain('at every position');
  });
});

describe('option values of the wrong kind', () => {
  it.each<[string, () => unknown, string, string]>([
    ['backoff: null', () => handler({ backoff: null }), `${handlerKey('backoff')} is null`, 'Give { initial, multiplier, max, tiers }'],
    ['backoff: a string', () => handler({ backoff: '1s' }), `${handlerKey('backoff')} is "1s"`, 'Give { initial, multiplier, max, tiers }'],
    ['reconnect: a string', () => module({ reconnect: 'abc' }), `${moduleKey('reconnect')} is "abc"`, 'Give { initialDelay, maxDelay }'],
    ['reconnect: null', () => module({ reconnect: null }), `${moduleKey('reconnect')} is null`, 'Give { initialDelay, maxDelay }'],
    ['reconnect: an array', () => module({ reconnect: [] }), `${moduleKey('reconnect')} is []`, 'Give { initialDelay, maxDelay }'],
    ['delayedDelivery: an array', () => module({ delayedDelivery: [] }), `${moduleKey('delayedDelivery')} is []`, 'Use true, false, or {'],
    [
      'delayedDelivery: a Date',
      () => module({ delayedDelivery: new Date(0) }),
      `${moduleKey('delayedDelivery')} is "1970-01-01T00:00:00.000Z"`,
      'Use true, false, or {',
    ],
    ['connectionName: a number', () => module({ connectionName: 5 }), `${moduleKey('connectionName')} is 5`, 'Give the name the broker shows'],
    ['connectionName: an object', () => module({ connectionName: {} }), `${moduleKey('connectionName')} is {}`, 'Give the name the broker shows'],
    ['connectionName: blank', () => module({ connectionName: ' ' }), `${moduleKey('connectionName')} is " "`, 'Give the name the broker shows'],
  ])('refuses %s, naming the key and the fix', (_case, read, start, fix) => {
    const message = refusal(read);
    expect(message.startsWith(start)).toBe(true);
    expect(message).toContain(fix);
  });

  it('keeps a valid connectionName and reconnect', () => {
    expect(module({ connectionName: 'orders-service', reconnect: { initialDelay: '1s' } })).toMatchObject({
      connectionName: 'orders-service',
      reconnect: { initialDelayMs: 1_000 },
    });
  });
});

describe('values that JSON cannot write, in error messages', () => {
  const cycle: Record<string, unknown> = { a: 1 };
  cycle.self = cycle;
  const throwing = {
    get initial(): never {
      throw new Error('getter');
    },
  };

  it.each<[string, unknown, string]>([
    ['a BigInt', 10n, '10n'],
    ['a BigInt inside an object', { header: 10n }, '{"header":"10n"}'],
    ['a symbol', Symbol('x'), 'Symbol(x)'],
    ['a cycle', cycle, 'an object'],
    ['a getter that throws', throwing, 'an object'],
    ['an object without a prototype', Object.create(null), '{}'],
    ['a function', () => 1, 'a function'],
    ['a long string', 'x'.repeat(500), `"${'x'.repeat(199)}…`],
    ['a lone surrogate', `a${HALF}`, '"a\\ud83d"'],
  ])('shows %s', (_case, value, text) => {
    expect(showValue(value)).toBe(text);
  });

  it.each<[string, () => unknown, string]>([
    ['delayedDelivery', () => module({ delayedDelivery: 10n }), `${moduleKey('delayedDelivery')} is 10n`],
    ['circuitBreaker', () => module({ circuitBreaker: 10n }), `${moduleKey('circuitBreaker')} is 10n`],
    ['rateLimit', () => module({ rateLimit: 10n }), `${moduleKey('rateLimit')} is 10n`],
    ['heartbeat', () => module({ heartbeat: 10n }), `${moduleKey('heartbeat')} is 10n`],
    ['outbox', () => module({ outbox: 10n }), moduleKey('outbox')],
    ['routingKey', () => handler({ routingKey: 10n }), `${handlerKey('routingKey')} is 10n`],
    ['singleActiveConsumer', () => handler({ singleActiveConsumer: 10n }), `${handlerKey('singleActiveConsumer')} is 10n`],
    ['overflow', () => handler({ maxLength: 5, overflow: 10n }), `${handlerKey('overflow')} is 10n`],
    ['onExpired', () => handler({ onExpired: 10n }), `${handlerKey('onExpired')} is 10n`],
    ['partitions.key', () => handler({ partitions: { count: 2, key: { header: 10n } } }), `${handlerKey('partitions.key')} is {"header":"10n"}`],
    ['ordering.key', () => handler({ ordering: { key: { header: 10n } } }), `${handlerKey('ordering.key')} is {"header":"10n"}`],
    [
      'ordering.whileRetrying',
      () => handler({ ordering: { key: { header: 'h' }, whileRetrying: 10n } }),
      `${handlerKey('ordering.whileRetrying')} is 10n`,
    ],
    ['exchangeType', () => handler({ exchangeType: Symbol('topic') }), `${handlerKey('exchangeType')} is Symbol(topic)`],
    ['routingKey (a cycle)', () => handler({ routingKey: cycle }), `${handlerKey('routingKey')} is an object`],
  ])('refuses a BigInt, symbol or cycle in %s with a RetryConfigError', (_key, read, start) => {
    expect(refusal(read).startsWith(start)).toBe(true);
  });
});

describe('queues named like what the library derives for another handler or the delay ladder', () => {
  const entry = (where: string, options: Record<string, unknown>) => ({ config: handler(options), where });
  const partitioned = { partitions: { count: 2, key: 'messageId' } };
  const refusedBetween = (entries: Array<{ config: ReturnType<typeof handler>; where: string }>) => refusal(() => assertDistinctQueues(entries));

  it.each<[string, Record<string, unknown>, string]>([
    ['errorQueue', { errorQueue: 'amqp-retry.delay.ready' }, 'amqp-retry.delay'],
    ['errorQueue', { errorQueue: 'amqp-retry.delay.error' }, 'amqp-retry.delay'],
    ['queue', { queue: 'amqp-retry.delay.v1.p03.1536ms' }, 'amqp-retry.delay'],
    ['errorQueue', { errorQueue: 'amqp-retry.delay.quorum.ready' }, 'amqp-retry.delay'],
  ])('refuses %s %j, a name of the default delay ladder', (key, options, ladder) => {
    const message = refusal(() => handler(options));
    expect(message.startsWith(handlerKey(key))).toBe(true);
    expect(message).toContain(`a name of the delay ladder "${ladder}"`);
    expect(message).toContain(`Give it a name outside "${ladder}.*"`);
  });

  it('refuses names under a configured ladder prefix too', () => {
    const billing = resolveModuleConfig({ delayedDelivery: { prefix: 'billing.delay' } }, {});
    const read = () => resolveHandlerConfig({ queue: 'orders', errorQueue: 'billing.delay.ready' }, billing, 'Orders.handle');
    expect(refusal(read)).toContain('a name of the delay ladder "billing.delay"');
    expect(handler({ errorQueue: 'amqp-retry.delayed' }).errorQueue).toBe('amqp-retry.delayed');
  });

  it.each<[string, Record<string, unknown>, Record<string, unknown>, string]>([
    ['errorQueue', { errorQueue: 'orders.dlx.dead' }, {}, 'the retry topology of "orders"'],
    ['errorQueue', { errorQueue: 'orders.retry.plan' }, {}, 'the retry topology of "orders"'],
    ['queue', { queue: 'orders.retry.1.1s.abc' }, {}, 'the retry topology of "orders"'],
    ['queue', { queue: 'orders.dlx' }, {}, 'the retry topology of "orders"'],
    ['errorQueue', { errorQueue: 'orders.p1' }, partitioned, 'the partitions of "orders"'],
    ['queue', { queue: 'orders.p0.retry.plan' }, partitioned, 'the partitions of "orders"'],
    ['errorQueue', { errorQueue: 'orders.p1.error' }, partitioned, 'the partitions of "orders"'],
    ['queue', { queue: 'orders.partitions.key' }, partitioned, 'the partitions of "orders"'],
    ['errorQueue', { errorQueue: 'orders.parked.p1' }, { ...partitioned, errorQueue: 'orders.parked' }, 'a partition of "orders"'],
  ])('refuses %s %j, derived for another handler on "orders", naming it and the way out', (key, options, orders, role) => {
    const message = refusedBetween([
      entry('Orders.handle', { queue: 'orders', ...orders }),
      entry('Invoices.handle', { queue: 'invoices', ...options }),
    ]);
    expect(message.startsWith(`Invalid retry configuration: @RetryWithBackoff option "${key}" of Invoices.handle`)).toBe(true);
    expect(message).toContain(role);
    expect(message).toContain('which belongs to Orders.handle');
    expect(message).toContain('Give it a name outside those of "orders"');
  });

  it("refuses a parking queue that is one of its own handler's partitions", () => {
    const message = refusedBetween([entry('Orders.handle', { errorQueue: 'orders.p0', ...partitioned })]);
    expect(message).toContain('option "errorQueue" of Orders.handle is "orders.p0", a name the partitions of "orders" derive');
  });

  it('takes names that only look alike', () => {
    const entries = [
      entry('Orders.handle', { queue: 'orders', ...partitioned }),
      entry('Invoices.handle', { queue: 'orders.pending', errorQueue: 'orders.error' }),
      entry('Refunds.handle', { queue: 'orders.dlxx', errorQueue: 'orders.px' }),
    ];
    expect(() => assertDistinctQueues(entries)).not.toThrow();
  });
});
