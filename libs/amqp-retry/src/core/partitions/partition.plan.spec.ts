import { resolveHandlerConfig } from '../config/handler.config.js';
import { resolveModuleConfig } from '../config/module.config.js';
import type { RetryHandlerOptions } from '../config/retry.options.js';
import { planRetryTopology } from '../topology/retry-topology.plan.js';
import {
  assignPartitions,
  hashExchangeBindings,
  otherPartitionQueue,
  partitionConfigs,
  partitionOwners,
  RETIRED_SEARCH_GAP,
  searchesRetired,
} from './partition.plan.js';
import { MAX_PARTITIONS } from './partitions.config.js';

const resolve = (options: RetryHandlerOptions) => resolveHandlerConfig(options, resolveModuleConfig(), 'A.b');

describe('hashExchangeBindings', () => {
  it("binds the handler's exchange into the hash exchange, then each partition in its order, as the partitions' own topology does", () => {
    const config = resolve({ queue: 'acc', exchange: 'bank', routingKey: ['a.*', 'b.#'], partitions: { count: 3, key: { header: 'k' } } });
    const plan = hashExchangeBindings(config);
    const own = partitionConfigs(config).flatMap((part) => planRetryTopology(part).bindings.filter((b) => b.source === 'bank' || b.source === 'acc'));
    expect(plan.exchanges).toEqual([{ name: 'bank', type: 'topic' }]);
    expect(plan.queues).toEqual([]);
    expect(plan.bindings.map((b) => `${b.source}>${b.destination}:${b.pattern}`)).toEqual([
      'bank>acc:a.*',
      'bank>acc:b.#',
      'acc>acc.p0:1',
      'acc>acc.p1:1',
      'acc>acc.p2:1',
    ]);
    for (const binding of own) expect(plan.bindings).toContainEqual(binding);
  });

  it('has only the partitions when publishers use the hash exchange itself', () => {
    const plan = hashExchangeBindings(resolve({ queue: 'acc', partitions: { count: 2, key: 'messageId' } }));
    expect(plan.exchanges).toEqual([]);
    expect(plan.bindings.map((b) => `${b.source}>${b.destination}:${b.pattern}`)).toEqual(['acc>acc.p0:1', 'acc>acc.p1:1']);
  });
});

describe('otherPartitionQueue', () => {
  const acc = resolve({ queue: 'acc', partitions: { count: 4, key: { header: 'k' } } });

  it('gives a partition beyond the count as that partition of a larger count has it: its parking queue and tiers', () => {
    const p5 = otherPartitionQueue(acc, 'acc.p5');
    expect(p5).toMatchObject({ queue: 'acc.p5', errorQueue: 'acc.p5.error', partitionOf: { queue: 'acc', index: 5, count: 6 } });
    expect(p5?.delaysMs).toEqual(acc.delaysMs);
    const named = resolve({ queue: 'acc', errorQueue: 'acc.parked', partitions: { count: 2, key: 'messageId' } });
    expect(otherPartitionQueue(named, 'acc.p2')?.errorQueue).toBe('acc.parked.p2');
  });

  it("gives the handler's queue before partitions as it ran unpartitioned", () => {
    const before = otherPartitionQueue(acc, 'acc');
    expect(before).toMatchObject({ queue: 'acc', errorQueue: 'acc.error', partitions: undefined });
  });

  it('gives nothing for a current partition, another name, or a number spelled otherwise', () => {
    for (const name of ['acc.p0', 'acc.p3', 'acc.p04', 'acc.p', 'acc.p5x', 'acc.p-5', 'acc.p1e1', 'acc.p256', 'other.p5', 'acc.error', 'accp5']) {
      expect([name, otherPartitionQueue(acc, name)]).toEqual([name, undefined]);
    }
    expect(otherPartitionQueue(acc, 'acc.p255')?.queue).toBe('acc.p255');
    expect(otherPartitionQueue(resolve({ queue: 'acc' }), 'acc.p5')).toBeUndefined();
  });
});

describe('partitionConfigs', () => {
  it('makes one handler per partition: its queue, parking queue, single active consumer and ordering by the key', () => {
    const parts = partitionConfigs(resolve({ queue: 'acc', exchange: 'bank', routingKey: 'acc.*', partitions: { count: 3, key: { header: 'k' } } }));
    expect(parts.map((p) => [p.queue, p.errorQueue])).toEqual([
      ['acc.p0', 'acc.p0.error'],
      ['acc.p1', 'acc.p1.error'],
      ['acc.p2', 'acc.p2.error'],
    ]);
    for (const [i, p] of parts.entries()) {
      expect(p).toMatchObject({ exchange: 'acc', exchangeType: 'x-consistent-hash', routingKeys: ['1'], singleActiveConsumer: true });
      expect(p.partitionOf).toEqual({ queue: 'acc', index: i, count: 3 });
      expect(p.partitions).toBeUndefined();
      expect(p.ordering?.whileRetrying).toBe('continue');
    }
  });

  it('keeps a named parking queue apart per partition', () => {
    const parts = partitionConfigs(resolve({ queue: 'acc', errorQueue: 'acc.parked', partitions: { count: 2, key: 'messageId' } }));
    expect(parts.map((p) => p.errorQueue)).toEqual(['acc.parked.p0', 'acc.parked.p1']);
  });

  it('plans the hash exchange fed by the handler exchange, and the partition bound with weight 1', () => {
    const [p0] = partitionConfigs(
      resolve({ queue: 'acc', exchange: 'bank', routingKey: ['a.*', 'b.#'], partitions: { count: 2, key: { header: 'k' } } }),
    );
    const plan = planRetryTopology(p0);
    expect(plan.exchanges.slice(0, 2)).toEqual([
      { name: 'bank', type: 'topic' },
      { name: 'acc', type: 'x-consistent-hash', arguments: { 'hash-header': 'k' } },
    ]);
    expect(plan.queues[0]).toMatchObject({ name: 'acc.p0', arguments: { 'x-single-active-consumer': true, 'x-dead-letter-exchange': 'acc.p0.dlx' } });
    expect(plan.bindings.slice(0, 3)).toEqual([
      { source: 'bank', destination: 'acc', destinationType: 'exchange', pattern: 'a.*' },
      { source: 'bank', destination: 'acc', destinationType: 'exchange', pattern: 'b.#' },
      { source: 'acc', destination: 'acc.p0', destinationType: 'queue', pattern: '1' },
    ]);
  });

  it('without an exchange of its own, publishers use the hash exchange named like the queue', () => {
    const [p0] = partitionConfigs(resolve({ queue: 'acc', partitions: { count: 1, key: 'messageId' } }));
    const plan = planRetryTopology(p0);
    expect(plan.exchanges[0]).toEqual({ name: 'acc', type: 'x-consistent-hash', arguments: { 'hash-property': 'message_id' } });
    expect(plan.bindings.filter((b) => b.destinationType === 'exchange' && b.source === 'acc')).toEqual([]);
  });

  it("sorts every partition's expired and over-length messages into the handler's one dead-letter queue", () => {
    const parts = partitionConfigs(resolve({ queue: 'acc', partitions: { count: 2, key: 'messageId' } }));
    for (const part of parts) {
      const plan = planRetryTopology(part);
      expect(plan.queues.map((q) => q.name)).toContain('acc.dlx.dead');
      expect(plan.queues.map((q) => q.name)).not.toContain(`${part.queue}.dlx.dead`);
      const sorts = plan.bindings.filter((b) => b.source === `${part.queue}.dlx.sort`);
      expect(sorts.length).toBeGreaterThan(0);
      for (const b of sorts) expect(b).toMatchObject({ destination: 'acc.dlx.dead' });
      expect(sorts[0].arguments).toMatchObject({ 'x-first-death-queue': part.queue });
    }
  });

  it('leaves a handler without partitions as it is', () => {
    const config = resolve({ queue: 'plain' });
    expect(partitionConfigs(config)).toEqual([config]);
  });
});

describe('assignPartitions', () => {
  const counted = (ids: string[], count: number) => ids.map((id) => ({ id, count }));

  it('gives every partition to exactly one member, count/k each (or one more), the same from every view', () => {
    const members = counted(['c', 'a', 'b'], 8);
    const shares = members.map((m) => assignPartitions(members, m));
    expect(shares.flat().sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(shares.map((s) => s.length).sort()).toEqual([2, 3, 3]);
    for (let i = 0; i < 8; i++) expect(shares[members.findIndex((m) => m.id === partitionOwners(members)[i])]).toContain(i);
  });

  it('alone, a member takes every partition; a member missing from its own view counts itself', () => {
    expect(assignPartitions([], { id: 'x', count: 4 })).toEqual([0, 1, 2, 3]);
    expect(assignPartitions([{ id: 'y', count: 4 }], { id: 'x', count: 4 })).toEqual([0, 2]);
  });

  it('gives a member that is not ready (it has not taken its first share) none: its owners keep it until it says it is', () => {
    const joining = [
      { id: 'a', count: 4 },
      { id: 'b', count: 4, ready: false },
    ];
    expect(assignPartitions(joining, { id: 'a', count: 4 })).toEqual([0, 1, 2, 3]);
    expect(partitionOwners(joining)).toEqual(['a', 'a', 'a', 'a']);
    // The joiner itself counts itself ready: it takes its share, subscribed behind the owners, then says so.
    expect(assignPartitions(joining, { id: 'b', count: 4 })).toEqual([1, 3]);
    const ready = [
      { id: 'a', count: 4 },
      { id: 'b', count: 4 },
    ];
    expect(assignPartitions(ready, { id: 'a', count: 4 })).toEqual([0, 2]);
    // A larger count not ready yet: the partitions only it runs have no owner until it is.
    expect(
      partitionOwners([
        { id: 'a', count: 2 },
        { id: 'b', count: 4, ready: false },
      ]),
    ).toEqual(['a', 'a']);
  });

  it('with more members than partitions, some members hold none', () => {
    const members = counted(['a', 'b', 'c'], 2);
    expect(members.map((m) => assignPartitions(members, m))).toEqual([[0], [1], []]);
  });
});

describe('partitionOwners', () => {
  /** 'a:4 b:8': member a announced count 4, b count 8; 'a:-': a said no count. */
  const view = (members: string) =>
    members
      .split(' ')
      .filter(Boolean)
      .map((m) => {
        const [id, count] = m.split(':');
        return { id, count: count === '-' ? undefined : Number(count) };
      });

  it.each([
    ['one count: partition i to member i mod k, as sorted', 'b:4 a:4', 'a b a b'],
    ['one count, three members', 'c:8 a:8 b:8', 'a b c a b c a b'],
    // Raised in a rolling deploy: p4 .. p7 exist only for b, which declared them; a has no queue of those numbers.
    ['a raised count beside the earlier one', 'a:4 b:8', 'a b a b b b b b'],
    ['the same, the larger count sorted first', 'a:8 b:4', 'a b a b a a a a'],
    ['a raised count beside two of the earlier', 'a:4 b:8 c:4', 'a b c a b b b b'],
    ['two of the raised count share what only they run', 'a:4 b:8 c:8', 'a b c a b c b c'],
    // Lowered: the partitions beyond the new count stay with the instances that still run them, until they stop.
    ['a lowered count beside the earlier one', 'a:8 b:2', 'a b a a a a a a'],
    ['counts of three sizes', 'a:2 b:3 c:4', 'a b b c'],
    // A member that did not say its count owns nothing: it cannot be known to run any partition.
    ['a member that did not say its count', 'a:- b:4', 'b b b b'],
    ['nobody', '', ''],
  ])('%s', (_topic, members, expected) => {
    expect(partitionOwners(view(members)).join(' ')).toBe(expected);
  });

  it('takes more members than a call can spread as arguments', () => {
    const members = Array.from({ length: 200_000 }, (_, i) => ({ id: `m${String(i).padStart(6, '0')}`, count: 2 }));
    expect(partitionOwners(members)).toEqual(['m000000', 'm000001']);
  });

  it('gives each partition to a member that runs it, whatever the counts', () => {
    const counts = [1, 3, 4, 7, 8, 16];
    for (const a of counts) {
      for (const b of counts) {
        for (const c of counts) {
          const members = [
            { id: 'm2', count: a },
            { id: 'm0', count: b },
            { id: 'm1', count: c },
          ];
          const found = partitionOwners(members);
          expect(found).toHaveLength(Math.max(a, b, c));
          for (const [i, owner] of found.entries()) expect(members.find((m) => m.id === owner)!.count).toBeGreaterThan(i);
          // Each member's own answer (assignPartitions) is the same table: every partition owned exactly once.
          const shares = members.flatMap((m) => assignPartitions(members, m));
          expect(shares.sort((x, y) => x - y)).toEqual(found.map((_, i) => i));
        }
      }
    }
  });

  it('counts a member listed twice once, with its last count (itself, in assignPartitions)', () => {
    expect(
      assignPartitions(
        [
          { id: 'x', count: 2 },
          { id: 'y', count: 4 },
        ],
        { id: 'x', count: 4 },
      ),
    ).toEqual([0, 2]);
  });
});

describe('searchesRetired', () => {
  it('goes on past numbers missing in a row (retired partitions deleted out of order), up to the gap, never past the most partitions', () => {
    // count 4 after 16: p4 to p10 deleted, p11 kept for its parked messages: the search reaches it.
    expect(Array.from({ length: 7 }, (_, i) => searchesRetired(4 + i, i))).toEqual(Array(7).fill(true));
    expect(searchesRetired(11, 7)).toBe(true);
    expect(searchesRetired(12, RETIRED_SEARCH_GAP)).toBe(false);
    expect([searchesRetired(MAX_PARTITIONS - 1, 0), searchesRetired(MAX_PARTITIONS, 0)]).toEqual([true, false]);
  });
});
