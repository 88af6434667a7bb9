import { resolveHandlerConfig } from '../config/handler.config.js';
import { resolveModuleConfig } from '../config/module.config.js';
import { businessQueueArguments, planRetryTopology, tierPositionOf, tierQueues } from './retry-topology.plan.js';
import type { BindingDeclaration, TopologyPlan } from './topology.types.js';

const handler = (delays = ['1s', '10s', '1m'], exchange: { exchange?: string } = { exchange: 'shop' }) =>
  resolveHandlerConfig({ queue: 'orders', ...exchange, routingKey: 'order.*', delays }, resolveModuleConfig(), 'Test.handle');

/**
 * A tiny model of broker routing over a plan: direct, fanout, topic (* and #), headers (`all-with-x` on the headers
 * given), exchange-to-exchange bindings and alternate exchanges. Returns the queues reached.
 */
function route(plan: TopologyPlan, exchange: string, key: string, extra: BindingDeclaration[] = [], headers: Record<string, unknown> = {}): string[] {
  const declared = plan.exchanges.find((e) => e.name === exchange);
  if (!declared) throw new Error(`undeclared exchange ${exchange}`);
  const topic = (pattern: string) =>
    new RegExp(
      `^${pattern
        .split('.')
        .map((w) => (w === '#' ? '.*' : w === '*' ? '[^.]+' : w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('\\.')}$`,
    );
  const headersMatch = (b: BindingDeclaration) => {
    const { 'x-match': mode, ...wanted } = b.arguments ?? {};
    if (mode !== 'all-with-x') throw new Error(`the model knows only all-with-x, not ${String(mode)}`);
    return Object.entries(wanted).every(([name, value]) => headers[name] === value);
  };
  const matches = (b: BindingDeclaration) =>
    declared.type === 'fanout' ||
    (declared.type === 'headers' ? headersMatch(b) : declared.type === 'topic' ? topic(b.pattern).test(key) : b.pattern === key);
  const bound = [...plan.bindings, ...extra].filter((b) => b.source === exchange && matches(b));
  const targets = [
    ...new Set(bound.flatMap((b) => (b.destinationType === 'exchange' ? route(plan, b.destination, key, extra, headers) : [b.destination]))),
  ];
  const alternate = declared.arguments?.['alternate-exchange'];
  return targets.length === 0 && typeof alternate === 'string' ? route(plan, alternate, key, extra, headers) : targets;
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

/** The tier names of a configuration, keyed by their readable part: tier('1.1s') is 'orders.retry.1.1s.<id>'. */
const tierNamed = (delays: string[]) => {
  const names = tierQueues(handler(delays));
  return (readable: string) => names.find((n) => n.startsWith(`orders.retry.${readable}.`)) as string;
};
const T = tierNamed(['1s', '10s', '1m']);

describe('tierQueues', () => {
  it('names a tier by position, delay and a digest of the delays from it on', () => {
    expect(T('1.1s')).toMatch(/^orders\.retry\.1\.1s\.[0-9a-f]{6}$/);
    expect(T('3.1m')).toMatch(/^orders\.retry\.3\.1m\.[0-9a-f]{6}$/);
  });

  it('renames every tier that a change reaches, and only those', () => {
    const after = tierNamed(['1s', '20s', '1m']);
    expect(after('1.1s')).not.toBe(T('1.1s')); // its next tier changed
    expect(after('2.20s')).not.toBe(T('2.10s'));
    expect(after('3.1m')).toBe(T('3.1m')); // same delay, same tiers after it: the same queue
  });

  it('makes a former last tier a different queue when tiers are added after it', () => {
    expect(tierNamed(['1s'])('1.1s')).not.toBe(T('1.1s'));
  });

  it('gives two equal delays two queues', () => {
    expect(new Set(tierQueues({ queue: 'q', delaysMs: [500, 500, 500] })).size).toBe(3);
  });
});

describe('planRetryTopology', () => {
  it('declares exchanges before the queues that dead-letter to them, and binds last', () => {
    const plan = planRetryTopology(handler());
    expect(plan.exchanges.map((e) => e.name)).toEqual([
      'shop',
      'orders.dlx.first-tier',
      'orders.dlx.sort',
      'orders.dlx.first',
      'orders.dlx',
      'orders.return',
    ]);
    expect(plan.queues.map((q) => q.name)).toEqual([
      'orders',
      T('1.1s'),
      T('2.10s'),
      T('3.1m'),
      'orders.error',
      'orders.retry.plan',
      'orders.dlx.dead',
    ]);
    const exchangeNames = new Set(plan.exchanges.map((e) => e.name));
    for (const q of plan.queues) {
      const dlx = q.arguments['x-dead-letter-exchange'];
      if (dlx !== undefined) expect(exchangeNames.has(dlx as string)).toBe(true);
    }
    const queueNames = new Set(plan.queues.map((q) => q.name));
    for (const b of plan.bindings) {
      expect(exchangeNames.has(b.source)).toBe(true);
      expect((b.destinationType === 'queue' ? queueNames : exchangeNames).has(b.destination)).toBe(true);
    }
  });

  it('gives each tier its TTL and, as return key, the name of the next tier (the last its own)', () => {
    const [, , second, third] = planRetryTopology(handler()).queues;
    expect(second).toEqual({
      name: T('2.10s'),
      arguments: {
        'x-message-ttl': 10_000,
        'x-dead-letter-exchange': 'orders.return',
        'x-dead-letter-routing-key': T('3.1m'),
        'x-queue-type': 'classic',
      },
    });
    expect(third.arguments['x-dead-letter-routing-key']).toBe(T('3.1m'));
  });

  it.each(['classic', 'quorum'] as const)('states the type of every %s queue, so that no vhost default decides it', (queueType) => {
    const plan = planRetryTopology({ ...handler(), queueType });
    expect(plan.queues.map((q) => [q.name, q.arguments['x-queue-type']])).toEqual(plan.queues.map((q) => [q.name, queueType]));
    expect(businessQueueArguments('orders', queueType)['x-queue-type']).toBe(queueType);
  });

  it('walks a failing message through tiers 1, 2, 3 and then repeats the last', () => {
    expect(walk(planRetryTopology(handler()), 6, 'order.created')).toEqual([T('1.1s'), T('2.10s'), T('3.1m'), T('3.1m'), T('3.1m'), T('3.1m')]);
  });

  it('works with a single tier and without an exchange (publish to the queue by name)', () => {
    const plan = planRetryTopology(handler(['200ms'], {}));
    expect(plan.exchanges.map((e) => e.name)).not.toContain('shop');
    const only = tierNamed(['200ms'])('1.200ms');
    expect(walk(plan, 3, 'orders')).toEqual([only, only, only]);
  });

  it('returns a retry to its own queue only, never to a sibling bound on the same exchange and key', () => {
    const plan = planRetryTopology(handler());
    const sibling: BindingDeclaration = { source: 'shop', destination: 'billing', destinationType: 'queue', pattern: 'order.*' };
    expect(route(plan, 'shop', 'order.created', [sibling]).sort()).toEqual(['billing', 'orders']);
    expect(route(plan, 'orders.return', T('2.10s'), [sibling])).toEqual(['orders']);
  });

  it('keeps a message on the schedule it started with when the delays change under it', () => {
    // Bindings of both configurations are on the broker: a message keyed for an old tier stays on old tiers.
    const [old, next] = [tierNamed(['1s', '10s']), tierNamed(['2s', '20s'])];
    const before = planRetryTopology(handler(['1s', '10s']));
    const after = planRetryTopology(handler(['2s', '20s']));
    const both: TopologyPlan = { ...after, queues: [...after.queues, ...before.queues], bindings: [...after.bindings, ...before.bindings] };
    expect(route(both, 'orders.dlx', old('2.10s'))).toEqual([old('2.10s')]);
    expect(route(both, 'orders.dlx', next('2.20s'))).toEqual([next('2.20s')]);
    // The old first tier's binding to the first-tier fanout is what a later start removes (see retry-plan.record).
    expect(route(both, 'orders.dlx', 'order.created').sort()).toEqual([old('1.1s'), next('1.2s')].sort());
    expect(route(after, 'orders.dlx', 'order.created')).toEqual([next('1.2s')]);
  });
});

describe('planRetryTopology: deaths that are no rejection', () => {
  const plan = planRetryTopology(handler());
  const died = (reason: string, which: 'first' | 'last' = 'first', queue = 'orders') => ({
    [`x-${which}-death-queue`]: queue,
    [`x-${which}-death-reason`]: reason,
  });

  it.each(['expired', 'maxlen', 'delivery_limit'])('takes a message that died in the queue for "%s" out of the way of the tiers', (reason) => {
    expect(route(plan, 'orders.dlx', 'order.created', [], died(reason))).toEqual(['orders.dlx.dead']);
    // RabbitMQ 3.13+ also writes the last death: it catches one whose first death was in another queue.
    expect(route(plan, 'orders.dlx', 'order.created', [], { ...died('expired', 'first', 'upstream'), ...died(reason, 'last') })).toEqual([
      'orders.dlx.dead',
    ]);
  });

  it('sends a first rejection on to tier 1, also one that died elsewhere before for another reason', () => {
    expect(route(plan, 'orders.dlx', 'order.created', [], died('rejected'))).toEqual([T('1.1s')]);
    expect(route(plan, 'orders.dlx', 'order.created', [], died('expired', 'first', 'upstream'))).toEqual([T('1.1s')]);
    expect(route(plan, 'orders.dlx', 'order.created', [], { ...died('expired', 'first', 'upstream'), ...died('rejected', 'last') })).toEqual([
      T('1.1s'),
    ]);
  });

  it('declares the dead-letter queue with the handler queue type and binds it on the broker-written headers only', () => {
    const quorum = planRetryTopology({ ...handler(), queueType: 'quorum' });
    expect(quorum.queues.find((q) => q.name === 'orders.dlx.dead')?.arguments).toEqual({ 'x-queue-type': 'quorum' });
    const sorts = plan.bindings.filter((b) => b.source === 'orders.dlx.sort');
    expect(sorts).toHaveLength(6);
    for (const b of sorts) expect(b.arguments?.['x-match']).toBe('all-with-x');
  });
});

describe('planRetryTopology with queue limits', () => {
  const limited = (options: Record<string, unknown>, queueType: 'classic' | 'quorum' = 'classic') =>
    planRetryTopology(resolveHandlerConfig({ queue: 'orders', delays: ['1s'], queueType, ...options }, resolveModuleConfig(), 'Test.handle'))
      .queues[0].arguments;

  it('declares the handler queue with the limits given, and its tiers without them', () => {
    const args = limited({ maxLength: 100, maxLengthBytes: 1000, overflow: 'reject-publish-dlx', messageTtl: '10s', maxPriority: 5 });
    expect(args).toMatchObject({
      'x-max-length': 100,
      'x-max-length-bytes': 1000,
      'x-overflow': 'reject-publish-dlx',
      'x-message-ttl': 10_000,
      'x-max-priority': 5,
    });
    const plan = planRetryTopology(resolveHandlerConfig({ queue: 'orders', delays: ['1s'], maxLength: 5 }, resolveModuleConfig(), 'Test.handle'));
    expect(plan.queues[1].arguments['x-max-length']).toBeUndefined();
  });

  it('keeps the quorum queue at reject-publish, which its at-least-once dead-lettering needs', () => {
    expect(limited({ maxLength: 10 }, 'quorum')).toMatchObject({ 'x-max-length': 10, 'x-overflow': 'reject-publish' });
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
    const [first, second] = tierQueues(handler(['1s', '2s']));
    expect(args(first)).toMatchObject(atLeastOnce);
    expect(args(second)).toMatchObject(atLeastOnce);
    expect(args('orders.error')).toEqual({ 'x-queue-type': 'quorum' });
  });

  it('routes failures exactly as with classic queues', () => {
    const [first, second] = tierQueues(handler(['1s', '2s']));
    expect(walk(plan, 3, 'order.created')).toEqual([first, second, second]);
  });
});

describe('tierPositionOf', () => {
  it('is the position of a name tierQueues gives the queue, for any delays', () => {
    for (const delays of [['1s', '10s', '1m'], ['150ms'], ['90s', '1d']]) {
      tierQueues(handler(delays)).forEach((name, i) => expect(tierPositionOf(handler(delays).queue, name)).toBe(i + 1));
    }
  });

  it.each([
    'orders',
    'orders.error',
    'orders.retry.plan',
    'orders.retry.plan.lock',
    'orders.retry.live.a1b2c3',
    'orders.retry.0.1s.a1b2c3',
    'orders.retry.1.1x.a1b2c3',
    'orders.retry.1.1s.A1B2C3',
    'orders.retry.1.1s.a1b2c3.x',
    'other.retry.1.1s.a1b2c3',
    'orders.dlx.dead',
  ])('is undefined for %s, no tier of orders', (name) => expect(tierPositionOf('orders', name)).toBeUndefined());

  it('reads the queue name as it is, not as a pattern', () => {
    expect(tierPositionOf('a.b', 'a.b.retry.1.1s.a1b2c3')).toBe(1);
    expect(tierPositionOf('a.b', 'aXb.retry.1.1s.a1b2c3')).toBeUndefined();
    expect(tierPositionOf('a', 'a.b.retry.1.1s.a1b2c3')).toBeUndefined();
  });
});
