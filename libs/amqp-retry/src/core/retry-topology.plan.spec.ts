import { resolveHandlerConfig } from './handler-config.js';
import { resolveModuleConfig } from './module-config.js';
import { planRetryTopology, staleTierUnbindings } from './retry-topology.plan.js';
import type { BindingDeclaration, TopologyPlan } from './topology.types.js';

const handler = (delays = ['1s', '10s', '1m'], exchange: { exchange?: string } = { exchange: 'shop' }) =>
  resolveHandlerConfig({ queue: 'orders', ...exchange, routingKey: 'order.*', delays }, resolveModuleConfig(), 'Test.handle');

/** A tiny model of broker routing over a plan: direct, fanout, topic (* and #) and alternate exchanges. */
function route(plan: TopologyPlan, exchange: string, key: string, extra: BindingDeclaration[] = []): string[] {
  const declared = plan.exchanges.find((e) => e.name === exchange);
  if (!declared) throw new Error(`undeclared exchange ${exchange}`);
  const topic = (pattern: string) =>
    new RegExp(
      `^${pattern
        .split('.')
        .map((w) => (w === '#' ? '.*' : w === '*' ? '[^.]+' : w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('\\.')}$`,
    );
  const matches = (b: BindingDeclaration) =>
    declared.type === 'fanout' || (declared.type === 'topic' ? topic(b.pattern).test(key) : b.pattern === key);
  const targets = [...plan.bindings, ...extra].filter((b) => b.source === exchange && matches(b)).map((b) => b.destination);
  const alternate = declared.arguments?.['alternate-exchange'];
  return targets.length === 0 && typeof alternate === 'string' ? route(plan, alternate, key, extra) : targets;
}

/** Follows a message that fails `failures` times and returns the tier queues it waited in. */
function walk(plan: TopologyPlan, failures: number, originalKey: string): string[] {
  const queueArgs = (name: string) => plan.queues.find((q) => q.name === name)?.arguments ?? {};
  const visited: string[] = [];
  let key = originalKey;
  for (let i = 0; i < failures; i++) {
    const [tier, ...more] = route(plan, queueArgs('orders')['x-dead-letter-exchange'] as string, key);
    expect(more).toEqual([]);
    visited.push(tier);
    const args = queueArgs(tier);
    key = args['x-dead-letter-routing-key'] as string;
    expect(route(plan, args['x-dead-letter-exchange'] as string, key)).toEqual(['orders']);
  }
  return visited;
}

describe('planRetryTopology', () => {
  it('declares exchanges before the queues that dead-letter to them, and binds last', () => {
    const plan = planRetryTopology(handler());
    expect(plan.exchanges.map((e) => e.name)).toEqual(['shop', 'orders.dlx.first', 'orders.dlx', 'orders.return']);
    expect(plan.queues.map((q) => q.name)).toEqual(['orders', 'orders.retry.1', 'orders.retry.2', 'orders.retry.3', 'orders.error']);
    const exchangeNames = new Set(plan.exchanges.map((e) => e.name));
    for (const q of plan.queues) {
      const dlx = q.arguments['x-dead-letter-exchange'];
      if (dlx !== undefined) expect(exchangeNames.has(dlx as string)).toBe(true);
    }
    const queueNames = new Set(plan.queues.map((q) => q.name));
    for (const b of plan.bindings) {
      expect(exchangeNames.has(b.source)).toBe(true);
      expect(queueNames.has(b.destination)).toBe(true);
    }
  });

  it('gives each tier its TTL and its return key', () => {
    expect(planRetryTopology(handler()).queues[2]).toEqual({
      name: 'orders.retry.2',
      arguments: { 'x-message-ttl': 10_000, 'x-dead-letter-exchange': 'orders.return', 'x-dead-letter-routing-key': 'orders.after.2' },
    });
  });

  it('walks a failing message through tiers 1, 2, 3 and then repeats the last', () => {
    expect(walk(planRetryTopology(handler()), 6, 'order.created')).toEqual([
      'orders.retry.1',
      'orders.retry.2',
      'orders.retry.3',
      'orders.retry.3',
      'orders.retry.3',
      'orders.retry.3',
    ]);
  });

  it('works with a single tier and without an exchange (publish to the queue by name)', () => {
    const plan = planRetryTopology(handler(['200ms'], {}));
    expect(plan.exchanges.map((e) => e.name)).not.toContain('shop');
    expect(walk(plan, 3, 'orders')).toEqual(['orders.retry.1', 'orders.retry.1', 'orders.retry.1']);
  });

  it('returns a retry to its own queue only, never to a sibling bound on the same exchange and key', () => {
    const plan = planRetryTopology(handler());
    const sibling: BindingDeclaration = { source: 'shop', destination: 'billing', destinationType: 'queue', pattern: 'order.*' };
    expect(route(plan, 'shop', 'order.created', [sibling]).sort()).toEqual(['billing', 'orders']);
    expect(route(plan, 'orders.return', 'orders.after.1', [sibling])).toEqual(['orders']);
  });

  it('unbinds the self-loops that earlier, shorter configurations left on the tiers before the last', () => {
    expect(planRetryTopology(handler()).unbindings.map((b) => `${b.pattern}->${b.destination}`)).toEqual([
      'orders.after.1->orders.retry.1',
      'orders.after.2->orders.retry.2',
    ]);
  });
});

describe('planRetryTopology with quorum queues', () => {
  const plan = planRetryTopology(
    resolveHandlerConfig({ queue: 'orders', delays: ['1s', '2s'], queueType: 'quorum' }, resolveModuleConfig(), 'Test.handle'),
  );
  const args = (name: string) => plan.queues.find((q) => q.name === name)?.arguments;

  it('dead-letters at least once from the queue and from every tier, and sets a delivery limit above the library one', () => {
    const atLeastOnce = { 'x-queue-type': 'quorum', 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish' };
    expect(args('orders')).toEqual({ 'x-dead-letter-exchange': 'orders.dlx', ...atLeastOnce, 'x-delivery-limit': 20 });
    expect(args('orders.retry.1')).toMatchObject(atLeastOnce);
    expect(args('orders.retry.2')).toMatchObject(atLeastOnce);
    expect(args('orders.error')).toEqual({ 'x-queue-type': 'quorum' });
  });

  it('routes failures exactly as with classic queues', () => {
    expect(walk(plan, 3, 'order.created')).toEqual(['orders.retry.1', 'orders.retry.2', 'orders.retry.2']);
  });
});

describe('staleTierUnbindings', () => {
  it('cuts every route into a tier that is no longer configured', () => {
    expect(staleTierUnbindings('orders', 4).map((b) => `${b.source}:${b.pattern}->${b.destination}`)).toEqual([
      'orders.dlx:orders.after.3->orders.retry.4',
      'orders.dlx:orders.after.4->orders.retry.4',
    ]);
  });
});
