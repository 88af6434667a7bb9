import { RetryConfigError } from '../../errors/retry-config.error.js';
import { resolveHandlerConfig } from '../config/handler.config.js';
import { resolveModuleConfig } from '../config/module.config.js';
import { retryTopologyNames } from './retry-topology.names.js';
import { planRetryTopology, tierQueues } from './retry-topology.plan.js';

const DIGEST = /^[0-9a-f]{6}$/;

describe('retryTopologyNames', () => {
  it('names every queue and exchange the plan declares for the handler, in declaration order', () => {
    const names = retryTopologyNames('orders', { delays: ['1s', '10s'] });
    const plan = planRetryTopology(resolveHandlerConfig({ queue: 'orders', delays: ['1s', '10s'] }, resolveModuleConfig(), 'Test.handle'));

    expect(names.queues).toEqual(plan.queues.map((q) => q.name));
    expect(names.exchanges).toEqual(plan.exchanges.map((e) => e.name));
    expect(names.queues).toEqual(['orders', ...names.tiers, 'orders.error', 'orders.retry.plan', 'orders.dlx.dead']);
    expect(names.exchanges).toEqual(['orders.dlx.first-tier', 'orders.dlx.sort', 'orders.dlx.first', 'orders.dlx', 'orders.return']);
    expect(names).toMatchObject({
      queue: 'orders',
      errorQueue: 'orders.error',
      deadLetterExchange: 'orders.dlx',
      firstFailureExchange: 'orders.dlx.first',
      returnExchange: 'orders.return',
      planQueue: 'orders.retry.plan',
    });
  });

  it('gives the tier names the library declares: position, delay and a digest of the delays from that tier on', () => {
    const { tiers } = retryTopologyNames('orders', { delays: [1_500, '10s', '1m'] });

    expect(tiers).toEqual(tierQueues({ queue: 'orders', delaysMs: [1_500, 10_000, 60_000] }));
    expect(tiers.map((t) => t.split('.').slice(0, 4).join('.'))).toEqual(['orders.retry.1.1500ms', 'orders.retry.2.10s', 'orders.retry.3.1m']);
    for (const tier of tiers) expect(tier.split('.')[4]).toMatch(DIGEST);
    // the same delay in another schedule is another tier (its next tier differs), so a change never meets a 406
    expect(retryTopologyNames('orders', { delays: ['1s', '10s'] }).tiers[0]).not.toBe(
      retryTopologyNames('orders', { delays: ['1s', '20s'] }).tiers[0],
    );
    expect(retryTopologyNames('orders', { delays: ['1s', '10s'] }).tiers[1]).toBe(retryTopologyNames('orders', { delays: ['5s', '10s'] }).tiers[1]);
  });

  it("without delays, uses the library's default tiers (1s, 10s, 1m) and reads no environment", () => {
    const before = process.env.RETRY_DELAYS;
    process.env.RETRY_DELAYS = '5s';
    try {
      expect(retryTopologyNames('orders').tiers).toEqual(tierQueues({ queue: 'orders', delaysMs: [1_000, 10_000, 60_000] }));
    } finally {
      if (before === undefined) delete process.env.RETRY_DELAYS;
      else process.env.RETRY_DELAYS = before;
    }
  });

  it('computes backoff tiers as the decorator does, maxAttempts included', () => {
    expect(retryTopologyNames('orders', { backoff: { initial: '100ms', multiplier: 3 }, maxAttempts: 4 }).tiers).toEqual(
      tierQueues({ queue: 'orders', delaysMs: [100, 300, 900] }),
    );
    expect(retryTopologyNames('orders', { backoff: { initial: '1s', max: '2s', tiers: 3 } }).tiers).toEqual(
      tierQueues({ queue: 'orders', delaysMs: [1_000, 2_000, 2_000] }),
    );
  });

  it('names a custom parking queue, and the presence queue of the schedule', () => {
    const names = retryTopologyNames('billing.charge', { delays: ['200ms'], errorQueue: 'billing.parked' });

    expect(names.errorQueue).toBe('billing.parked');
    expect(names.queues).toContain('billing.parked');
    expect(names.queues).not.toContain('billing.charge.error');
    const digest = names.tiers[0].split('.').pop();
    expect(names.presenceQueue).toBe(`billing.charge.retry.live.${digest}`);
  });

  it('refuses what the decorator refuses, with a RetryConfigError that names the option', () => {
    const error = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return e;
      }
      throw new Error('expected a throw');
    };
    const soon = error(() => retryTopologyNames('orders', { delays: ['soon'] }));
    expect(soon).toBeInstanceOf(RetryConfigError);
    expect((soon as RetryConfigError).key).toBe('retryTopologyNames option "delays"');
    expect(error(() => retryTopologyNames('orders', { delays: ['1s'], backoff: { initial: '1s' } }))).toBeInstanceOf(RetryConfigError);
    expect(error(() => retryTopologyNames('orders', { errorQueue: 'orders' }))).toBeInstanceOf(RetryConfigError);
    expect(error(() => retryTopologyNames(''))).toBeInstanceOf(RetryConfigError);
    expect(error(() => retryTopologyNames('x'.repeat(250)))).toBeInstanceOf(RetryConfigError);
  });
});
