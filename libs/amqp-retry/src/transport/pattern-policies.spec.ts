import { resolveModuleConfig } from '../core/module-config.js';
import { tierQueues } from '../core/retry-topology.plan.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import { patternPolicy, queueConfig } from './pattern-policies.js';

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

  it('refuses what a pattern may not set, and values that are not a policy, naming the pattern', () => {
    expect(() => patternPolicy('order.x', { retry: { queue: 'q' } }, queue, server, module)).toThrow(/@EventPattern\("order.x"\).*"queue"/);
    expect(() => patternPolicy('order.x', { retry: 'fast' }, queue, server, module)).toThrow(/@EventPattern\("order.x"\)/);
    expect(() => patternPolicy('order.x', { retry: { delays: ['soon'] } }, queue, server, module)).toThrow(/"delays" of @EventPattern\("order.x"\)/);
    expect(() => patternPolicy('order.x', { retry: { maxAttempts: 0 } }, queue, server, module)).toThrow(/maxAttempts/);
  });
});
