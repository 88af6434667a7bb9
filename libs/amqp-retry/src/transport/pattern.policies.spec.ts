import { resolveModuleConfig } from '../core/config/module.config.js';
import { tierQueues } from '../core/topology/retry-topology.plan.js';
import { partitionConfigs } from '../core/partitions/partition.plan.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import { patternPolicy, policyExtras, queueConfig } from './pattern.policies.js';

const module = resolveModuleConfig({ delays: ['1s', '10s'] }, {});
const server = { queue: 'orders', delays: [500] };
const queue = queueConfig(server, module, ['order.created']);

describe('the policies of a RetryServer queue and its patterns', () => {
  it("takes the server's delays and attempts for the queue, binding the handlers' patterns when there is an exchange", () => {
    expect(queue).toMatchObject({ queue: 'orders', delaysMs: [500], maxAttempts: 2, errorQueue: 'orders.error' });
    const bound = queueConfig({ ...server, exchange: 'shop' }, module, ['order.created', 'order.paid']);
    expect(bound.routingKeys).toEqual(['order.created', 'order.paid']);
    expect(queueConfig({ ...server, exchange: 'shop', routingKey: 'order.*' }, module, ['order.created']).routingKeys).toEqual(['order.*']);
  });

  it("gives the queue the server's circuit breaker and rate limit (RetryServer options are the module's)", () => {
    const options = { queue: 'orders', circuitBreaker: { openFor: '2s' }, rateLimit: { calls: 5, per: '1s' } };
    const config = queueConfig(options, resolveModuleConfig(options, {}), []);
    expect(config.circuitBreaker).toMatchObject({ openForMs: 2_000, failureRate: 0.5 });
    expect(config.rateLimit).toEqual({ calls: 5, perMs: 1_000, burst: 1 });
    expect(queue.circuitBreaker).toBeUndefined();
  });

  it("refuses the 'raw' deserializer, in which the server could find no packet, naming the option and the fix", () => {
    expect(() => queueConfig({ ...server, deserializer: 'raw' }, module, [])).toThrow(
      /RetryServer option "deserializer" is 'raw'.*no pattern's handler would run.*Leave it out \(the transport reads JSON\), or give a function/,
    );
    expect(queueConfig({ ...server, deserializer: (body: Buffer) => JSON.parse(body.toString()) as unknown }, module, []).queue).toBe('orders');
  });

  it("gives a pattern without a retry extra the queue's policy, on the queue's schedule", () => {
    const { policy, schedule } = patternPolicy('order.paid', undefined, queue, server, module);
    expect(policy.maxAttempts).toBe(2);
    expect(policy.firstTier).toBeUndefined();
    expect(schedule).toBeUndefined();
  });

  it('keeps the queue schedule for a pattern that changes only its attempts', () => {
    const { policy, schedule } = patternPolicy('order.paid', { retry: { maxAttempts: 5 } }, queue, server, module);
    expect(policy).toMatchObject({ maxAttempts: 5, delaysMs: [500], firstTier: undefined });
    expect(schedule).toBeUndefined();
  });

  it('gives a pattern with its own delays a schedule of its own, whose first tier takes its first failures', () => {
    const { policy, schedule } = patternPolicy('order.created', { retry: { delays: ['200ms', '1s'], maxAttempts: 3 } }, queue, server, module);
    expect(policy).toMatchObject({ maxAttempts: 3, delaysMs: [200, 1000] });
    expect(schedule).toMatchObject({ queue: 'orders', delaysMs: [200, 1000], errorQueue: 'orders.error' });
    expect(policy.firstTier).toBe(tierQueues(schedule!)[0]);
    expect(policy.firstTier).not.toBe(tierQueues(queue)[0]);
  });

  it('derives attempts from its own tiers when it gives delays without maxAttempts', () => {
    expect(patternPolicy('p', { retry: { delays: [100, 200, 300] } }, queue, server, module).policy.maxAttempts).toBe(4);
  });

  it("classifies errors with the pattern's nonRetryable, else the server's", () => {
    class Invalid extends Error {}
    const own = patternPolicy('p', { retry: { nonRetryable: [Invalid] } }, queue, server, module).policy;
    expect(own.isRetryable(new Invalid())).toBe(false);
    expect(own.isRetryable(new Error())).toBe(true);
    expect(own.isRetryable(new NonRetryableError('x'))).toBe(false);
    const inherited = patternPolicy('p', { retry: { maxAttempts: 3 } }, queue, { ...server, nonRetryable: [Invalid] }, module).policy;
    expect(inherited.isRetryable(new Invalid())).toBe(false);
  });

  it("takes a pattern's own timeout, else the server's handlerTimeout, and keeps the queue's schedule for it", () => {
    const limited = resolveModuleConfig({ delays: ['1s', '10s'], handlerTimeout: '30s' }, {});
    const limitedQueue = queueConfig(server, limited, ['order.created']);
    expect(patternPolicy('order.paid', undefined, limitedQueue, server, limited).policy).toMatchObject({ timeoutMs: 30_000 });
    const own = patternPolicy('order.paid', { retry: { timeout: '2s' } }, limitedQueue, server, limited);
    expect(own.policy).toMatchObject({ timeoutMs: 2_000, delaysMs: [500], firstTier: undefined });
    expect(own.schedule).toBeUndefined();
    expect(patternPolicy('order.paid', { retry: { maxAttempts: 3 } }, queue, server, module).policy.timeoutMs).toBe(0);
    expect(() => patternPolicy('order.x', { retry: { timeout: 'later' } }, queue, server, module)).toThrow(/"timeout" of @EventPattern\("order.x"\)/);
  });

  it('refuses what a pattern may not set, and values that are not a policy, naming the pattern', () => {
    expect(() => patternPolicy('order.x', { retry: { queue: 'q' } }, queue, server, module)).toThrow(/@EventPattern\("order.x"\).*"queue"/);
    expect(() => patternPolicy('order.x', { retry: 'fast' }, queue, server, module)).toThrow(/@EventPattern\("order.x"\)/);
    expect(() => patternPolicy('order.x', { retry: { delays: ['soon'] } }, queue, server, module)).toThrow(/"delays" of @EventPattern\("order.x"\)/);
    expect(() => patternPolicy('order.x', { retry: { maxAttempts: 0 } }, queue, server, module)).toThrow(/maxAttempts/);
  });
});

describe('a partitioned RetryServer queue', () => {
  const partitioned = { ...server, exchange: 'shop', partitions: { count: 2, key: { header: 'x-account-id' }, whileRetrying: 'hold' as const } };

  it("passes partitions into the queue's configuration, bound to the server's exchange with the patterns", () => {
    const config = queueConfig(partitioned, module, ['order.created']);
    expect(config.partitions).toMatchObject({ count: 2, hashArguments: { 'hash-header': 'x-account-id' } });
    const parts = partitionConfigs(config);
    expect(parts.map((p) => [p.queue, p.errorQueue, p.retryInPlace])).toEqual([
      ['orders.p0', 'orders.p0.error', true],
      ['orders.p1', 'orders.p1.error', true],
    ]);
    expect(parts[0].upstream).toEqual({ exchange: 'shop', exchangeType: 'topic', routingKeys: ['order.created'] });
  });

  it("gives a pattern with its own delays a schedule per partition, whose first tier is the partition's", () => {
    const [p0, p1] = partitionConfigs(queueConfig(partitioned, module, ['order.created']));
    const own = { retry: { delays: ['200ms'], maxAttempts: 3 } };
    const first = patternPolicy('order.created', own, p0, partitioned, module);
    const second = patternPolicy('order.created', own, p1, partitioned, module);
    expect(first.schedule).toMatchObject({ queue: 'orders.p0', delaysMs: [200], errorQueue: 'orders.p0.error' });
    expect(first.policy.firstTier).toBe(tierQueues({ queue: 'orders.p0', delaysMs: [200] })[0]);
    expect(second.policy.firstTier).toBe(tierQueues({ queue: 'orders.p1', delaysMs: [200] })[0]);
    expect(patternPolicy('order.paid', undefined, p1, partitioned, module).policy).toBe(p1);
  });

  it('refuses partitions without an exchange, and the refusals of partitioned handlers, naming the RetryServer option', () => {
    expect(() => queueConfig({ ...partitioned, exchange: undefined }, module, [])).toThrow(
      'Invalid retry configuration: RetryServer option "partitions" is given without "exchange"',
    );
    expect(() => queueConfig({ ...partitioned, exchange: 'orders' }, module, [])).toThrow('RetryServer option "exchange" is "orders"');
    expect(() => queueConfig({ ...partitioned, partitions: { count: 0, key: 'messageId' } }, module, [])).toThrow(
      'RetryServer option "partitions.count"',
    );
    const breaker = { ...partitioned, circuitBreaker: true };
    expect(() => queueConfig(breaker, resolveModuleConfig(breaker, {}), [])).toThrow(
      'RetryServer option "circuitBreaker" is given together with "partitions"',
    );
  });
});

describe('the policy of a pattern with several handlers', () => {
  const retry = { retry: { maxAttempts: 5 } };

  it('takes the retry extras of whichever handler gives them, else the first', () => {
    expect(policyExtras('p', [{}, retry, undefined])).toBe(retry);
    expect(policyExtras('p', [retry])).toBe(retry);
    const first = { other: 1 };
    expect(policyExtras('p', [first, {}])).toBe(first);
    expect(policyExtras('p', [])).toBeUndefined();
  });

  it('refuses two handlers that each give one, naming the pattern', () => {
    expect(() => policyExtras('order.paid', [retry, {}, { retry: { maxAttempts: 2 } }])).toThrow(/"order.paid".*2 handlers/);
  });
});
