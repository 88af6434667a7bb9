import { describe, expect, it } from '@jest/globals';
import { seededRandom } from '../../testing/seeded-random.fixture.js';
import {
  assertLadderHeaders,
  configuredDelayPrefix,
  isLadderTarget,
  assertValidDelay,
  DELAY_LADDER,
  delayLevels,
  type DelayTopology,
  MAX_DELAY_MS,
  planDelayedPublish,
  planDelayTopology,
  delayLadderPrefix,
} from './delay.plan.js';
import { DelayHeader } from '../headers/header.names.js';

const { unitMs } = DELAY_LADDER;
const target = { exchange: 'orders', routingKey: 'order.created.eu' };
const NOW = Date.parse('2030-01-01T00:00:00.000Z');

/** Delays of every magnitude: uniform over the range, log-uniform (many short ones), and fractional. */
function randomDelays(count: number, seed: number): number[] {
  const next = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => {
    if (i % 3 === 0) return Math.floor(next() * (MAX_DELAY_MS + 1));
    if (i % 3 === 1) return Math.floor(Math.exp(next() * Math.log(MAX_DELAY_MS)));
    return next() * 10_000;
  });
}

const EDGES = [0, 0.001, 1, unitMs - 0.5, unitMs, unitMs + 0.5, 7, 8, 63, 64, 1500, 86_400_000, MAX_DELAY_MS - 1, MAX_DELAY_MS];

/** AMQP topic matching: words split on '.', '*' matches one word, '#' zero or more. */
function topicMatches(pattern: string, key: string): boolean {
  const match = (p: readonly string[], k: readonly string[]): boolean => {
    if (p.length === 0) return k.length === 0;
    const [head, ...rest] = p;
    if (head === '#') return match(rest, k) || (k.length > 0 && match(p, k.slice(1)));
    return k.length > 0 && (head === '*' || head === k[0]) && match(rest, k.slice(1));
  };
  return match(pattern.split('.'), key.split('.'));
}

/** The queues a message published to `exchange` with `key` lands in, following exchange-to-exchange bindings. */
function route(topology: DelayTopology, exchange: string, key: string): string[] {
  const type = topology.exchanges.find((e) => e.name === exchange)?.type;
  if (type === undefined) throw new Error(`undeclared exchange ${exchange}`);
  return topology.bindings
    .filter((b) => b.source === exchange && (type === 'fanout' || topicMatches(b.pattern, key)))
    .flatMap((b) => (b.destinationType === 'queue' ? [b.destination] : route(topology, b.destination, key)));
}

/** Walks a published message through the ladder as the broker would; returns the TTLs of the queues it waited in. */
function walk(topology: DelayTopology, exchange: string, key: string): number[] {
  const ttls: number[] = [];
  for (let next = exchange; ;) {
    const queues = route(topology, next, key);
    expect(queues).toHaveLength(1);
    const queue = topology.queues.find((q) => q.name === queues[0]);
    if (queue === undefined) throw new Error(`undeclared queue ${queues[0]}`);
    if (queue.name === topology.readyQueue) return ttls;
    const ttl = queue.arguments['x-message-ttl'];
    const deadLetterExchange = queue.arguments['x-dead-letter-exchange'];
    if (typeof ttl !== 'number' || typeof deadLetterExchange !== 'string') throw new Error(`${queue.name} is no level`);
    ttls.push(ttl);
    if (ttls.length > DELAY_LADDER.positions) throw new Error(`walk does not end: ${ttls.join(', ')}`);
    next = deadLetterExchange;
  }
}

describe('delayLevels', () => {
  it('waits at least the delay and less than one unit more, for edges and 30,000 random delays', () => {
    // Violations are collected, not asserted one by one: a failure then lists every bad delay at once.
    const violations = [...EDGES, ...randomDelays(30_000, 1)].flatMap((delay) => {
      const levels = delayLevels(delay);
      const total = levels.reduce((sum, level) => sum + level.ttlMs, 0);
      const positions = levels.map((level) => level.position);
      const ok = total >= delay && total - delay < unitMs && positions.every((position, i) => i === 0 || position < (positions[i - 1] ?? 0));
      return ok ? [] : [{ delay, levels }];
    });
    expect(violations).toEqual([]);
  });

  it('needs no level for 0, one level below a unit, and every position at the maximum', () => {
    expect(delayLevels(0)).toEqual([]);
    expect(delayLevels(0.001)).toEqual([{ position: 0, digit: 1, ttlMs: unitMs }]);
    expect(delayLevels(unitMs)).toEqual([{ position: 0, digit: 1, ttlMs: unitMs }]);
    expect(delayLevels(1500)).toEqual([
      { position: 3, digit: 2, ttlMs: 1024 },
      { position: 2, digit: 7, ttlMs: 448 },
      { position: 1, digit: 3, ttlMs: 24 },
      { position: 0, digit: 4, ttlMs: 4 },
    ]);
    const max = delayLevels(MAX_DELAY_MS);
    expect(max).toHaveLength(DELAY_LADDER.positions);
    expect(max[0]).toEqual({ position: 10, digit: 3, ttlMs: 3 * 2 ** 30 });
  });
});

describe('delay validation', () => {
  const range = `a delay must be a finite number of milliseconds from 0 to ${MAX_DELAY_MS} (about 49.7 days).`;

  it.each([
    [-1, '-1 ms'],
    [-0.001, '-0.001 ms'],
    [Number.NaN, 'NaN ms'],
    [Number.POSITIVE_INFINITY, 'Infinity ms'],
    [Number.NEGATIVE_INFINITY, '-Infinity ms'],
    [MAX_DELAY_MS + 0.5, `${MAX_DELAY_MS + 0.5} ms`],
    [MAX_DELAY_MS + 1, `${MAX_DELAY_MS + 1} ms`],
  ])('rejects %p, naming it and the valid range', (delay, shown) => {
    const error = new RangeError(`Invalid delay ${shown}: ${range}`);
    expect(() => assertValidDelay(delay)).toThrow(error);
    expect(() => delayLevels(delay)).toThrow(error);
    expect(() => planDelayedPublish(delay, target, NOW)).toThrow(error);
  });

  it('rejects a value that is no number, naming its type', () => {
    expect(() => assertValidDelay('100')).toThrow(new RangeError(`Invalid delay (a string): ${range}`));
  });

  it('accepts 0 and the maximum', () => {
    expect(() => assertValidDelay(0)).not.toThrow();
    expect(() => assertValidDelay(MAX_DELAY_MS)).not.toThrow();
  });
});

describe('planDelayTopology', () => {
  const topology = planDelayTopology();

  it('keeps the layout its names were made for (bump DELAY_LADDER.version when changing it)', () => {
    expect(DELAY_LADDER).toEqual({ prefix: 'amqp-retry.delay', version: 1, unitMs: 1, base: 8, positions: 11 });
    expect(MAX_DELAY_MS).toBe(2 ** 32 - 1);
  });

  it('declares a fixed set: 11 topic exchanges and 73 level queues, plus the ready exchange, ready and error queues', () => {
    expect(topology.exchanges.filter((e) => e.type === 'topic')).toHaveLength(11);
    expect(topology.exchanges.filter((e) => e.type === 'fanout')).toEqual([{ name: 'amqp-retry.delay.ready', type: 'fanout' }]);
    expect(topology.queues).toHaveLength(10 * 7 + 3 + 2);
    expect(topology.readyQueue).toBe('amqp-retry.delay.ready');
    expect(topology.errorQueue).toBe('amqp-retry.delay.error');
    expect(new Set(topology.exchanges.map((e) => e.name)).size).toBe(topology.exchanges.length);
    expect(new Set(topology.queues.map((q) => q.name)).size).toBe(topology.queues.length);
    expect(planDelayTopology('other.prefix').queues).toHaveLength(topology.queues.length);
  });

  it('names every level queue after its TTL, under the prefix and layout version', () => {
    const names = planDelayTopology('billing.delay').queues.map((q) => q.name);
    expect(names).toContain('billing.delay.ready');
    expect(names).toContain('billing.delay.v1.p00.1ms');
    expect(names).toContain('billing.delay.v1.p03.3072ms');
    expect(names).toContain(`billing.delay.v1.p10.${3 * 2 ** 30}ms`);
    expect(names.every((name) => name.startsWith('billing.delay.'))).toBe(true);
  });

  it('gives every level a distinct TTL within the broker limit and dead-letters it, key kept, to a declared exchange', () => {
    const exchanges = new Set(topology.exchanges.map((e) => e.name));
    const levels = topology.queues.filter((q) => q.name !== topology.readyQueue && q.name !== topology.errorQueue);
    const ttls = levels.map((q) => q.arguments['x-message-ttl']);
    expect(new Set(ttls).size).toBe(levels.length);
    for (const queue of levels) {
      const ttl = queue.arguments['x-message-ttl'];
      expect(typeof ttl === 'number' && ttl >= 1 && ttl <= MAX_DELAY_MS && queue.name.endsWith(`.${ttl}ms`)).toBe(true);
      expect(exchanges.has(String(queue.arguments['x-dead-letter-exchange']))).toBe(true);
      expect(queue.arguments).not.toHaveProperty('x-dead-letter-routing-key');
    }
  });

  it('binds only declared exchanges and queues', () => {
    const exchanges = new Set(topology.exchanges.map((e) => e.name));
    const queues = new Set(topology.queues.map((q) => q.name));
    for (const binding of topology.bindings) {
      expect(exchanges.has(binding.source)).toBe(true);
      expect((binding.destinationType === 'queue' ? queues : exchanges).has(binding.destination)).toBe(true);
    }
  });

  it('routes every digit at every position to exactly one destination', () => {
    for (const [index, exchange] of topology.exchanges.filter((e) => e.type === 'topic').entries()) {
      const maxDigit = index === DELAY_LADDER.positions - 1 ? 3 : 7;
      for (let digit = 0; digit <= maxDigit; digit++) {
        const words = new Array<number>(DELAY_LADDER.positions).fill(5);
        words[DELAY_LADDER.positions - 1 - index] = digit;
        const matched = topology.bindings.filter((b) => b.source === exchange.name && topicMatches(b.pattern, words.join('.')));
        expect(matched).toHaveLength(1);
      }
    }
  });
});

describe('a quorum ladder', () => {
  const classic = planDelayTopology('billing.delay');
  const quorum = planDelayTopology('billing.delay', 'quorum');

  it('has the same layout under names of its own, sharing no exchange or queue with the classic one', () => {
    expect(quorum.prefix).toBe(delayLadderPrefix('billing.delay', 'quorum'));
    expect(quorum.prefix).toBe('billing.delay.quorum');
    expect(quorum.queueType).toBe('quorum');
    expect(quorum.queues.map((q) => q.name)).toEqual(classic.queues.map((q) => q.name.replace('billing.delay.', 'billing.delay.quorum.')));
    const classicNames = new Set([...classic.queues, ...classic.exchanges].map((d) => d.name));
    expect([...quorum.queues, ...quorum.exchanges].filter((d) => classicNames.has(d.name))).toEqual([]);
  });

  it('states classic as the type of every queue of a classic ladder, so that no vhost default makes them quorum', () => {
    expect(classic.queues.filter((q) => q.arguments['x-queue-type'] !== 'classic').map((q) => q.name)).toEqual([]);
  });

  it('makes every queue a quorum queue, and every level dead-letter at least once with its TTL kept', () => {
    expect(quorum.queues.every((q) => q.arguments['x-queue-type'] === 'quorum')).toBe(true);
    const levels = quorum.queues.filter((q) => q.arguments['x-message-ttl'] !== undefined);
    expect(levels).toHaveLength(73);
    for (const [i, level] of levels.entries()) {
      expect(level.arguments).toMatchObject({ 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish' });
      expect(level.arguments['x-message-ttl']).toBe(
        classic.queues.filter((q) => q.arguments['x-message-ttl'] !== undefined)[i].arguments['x-message-ttl'],
      );
    }
  });

  it('parks in its error queue what the delivery limit takes from the ready queue', () => {
    const ready = quorum.queues.find((q) => q.name === quorum.readyQueue);
    expect(ready?.arguments).toMatchObject({
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': quorum.errorQueue,
      'x-dead-letter-strategy': 'at-least-once',
    });
  });

  it('is entered by publishes planned with its prefix', () => {
    const plan = planDelayedPublish(1500, { exchange: 'x', routingKey: 'k' }, 0, quorum.prefix);
    expect(plan.kind === 'ladder' && quorum.exchanges.some((e) => e.name === plan.exchange)).toBe(true);
  });
});

describe('planDelayedPublish', () => {
  const topology = planDelayTopology();

  it('publishes a delay of 0 directly, outside the ladder', () => {
    expect(planDelayedPublish(0, target, NOW)).toEqual({ kind: 'direct' });
    expect(planDelayedPublish(-0, target, NOW)).toEqual({ kind: 'direct' });
  });

  it('enters the ladder at the highest nonzero digit, with the digits as key and the target in headers', () => {
    expect(planDelayedPublish(1500, target, NOW)).toEqual({
      kind: 'ladder',
      exchange: 'amqp-retry.delay.v1.p03',
      routingKey: '0.0.0.0.0.0.0.2.7.3.4',
      headers: {
        [DelayHeader.targetExchange]: 'orders',
        [DelayHeader.targetRoutingKey]: 'order.created.eu',
        [DelayHeader.ms]: 1500,
        [DelayHeader.dueAt]: '2030-01-01T00:00:01.500Z',
      },
    });
  });

  it('walks exactly the levels of the delay and reaches the ready queue, for edges and 3,000 random delays', () => {
    for (const delay of [...EDGES.filter((d) => d > 0), ...randomDelays(3_000, 2)]) {
      const plan = planDelayedPublish(delay, target, NOW);
      if (plan.kind !== 'ladder') throw new Error(`delay ${delay} skipped the ladder`);
      expect(walk(topology, plan.exchange, plan.routingKey)).toEqual(delayLevels(delay).map((l) => l.ttlMs));
    }
  });

  it('uses the given prefix for the entry exchange', () => {
    const plan = planDelayedPublish(5, target, NOW, 'billing.delay');
    expect(plan).toMatchObject({ kind: 'ladder', exchange: 'billing.delay.v1.p00' });
  });
});

describe('assertLadderHeaders', () => {
  const death = { queue: 'orders', reason: 'rejected', count: 1, exchange: '', 'routing-keys': ['orders'], time: { '!': 'timestamp', value: 1 } };

  it('lets through headers without x-death, and an x-death as a broker writes it', () => {
    expect(() => assertLadderHeaders(undefined)).not.toThrow();
    expect(() => assertLadderHeaders({ tenant: 'acme' })).not.toThrow();
    expect(() => assertLadderHeaders({ 'x-death': [death] })).not.toThrow();
  });

  it.each([[[1]], [[death, 'x']], ['a string'], [{ queue: 'q' }]])('refuses x-death %p, naming the header and the fix', (header) => {
    expect(() => assertLadderHeaders({ 'x-death': header })).toThrow(TypeError);
    expect(() => assertLadderHeaders({ 'x-death': header })).toThrow(/Invalid header x-death .*Remove x-death .*under another header name/);
  });
});

describe('the spec topic matcher', () => {
  it.each([
    ['a.#', 'a', true],
    ['*.b.#', 'a.b.c.d', true],
    ['*.1.#', '1.0.1', false],
    ['*', 'a.b', false],
    ['#', 'a.b', true],
  ])('%s matches %s: %p', (pattern, key, expected) => {
    expect(topicMatches(pattern, key)).toBe(expected);
  });
});

describe('isLadderTarget', () => {
  it.each([
    ['amqp-retry.delay.ready', '', true],
    ['amqp-retry.delay.v1.p03', '0.0.0.0.0.0.0.2.7.3.4', true],
    ['amqp-retry.delay.quorum.ready', '', true],
    ['', 'amqp-retry.delay.ready', true],
    ['', 'amqp-retry.delay.v1.p00.5ms', true],
    ['orders', 'amqp-retry.delay.ready', false],
    ['', 'orders', false],
    ['amqp-retry.delayed', '', false],
    ['amqp-retry.delay', '', false],
  ])('exchange %p, key %p: %p', (exchange, routingKey, expected) => {
    expect(isLadderTarget({ exchange, routingKey }, 'amqp-retry.delay')).toBe(expected);
  });

  it('is every name of both ladders of the prefix, and no other name under it', () => {
    for (const type of ['classic', 'quorum'] as const) {
      const ladder = planDelayTopology('billing', type);
      for (const { name } of ladder.exchanges) expect([name, isLadderTarget({ exchange: name, routingKey: 'k' }, 'billing')]).toEqual([name, true]);
      for (const { name } of ladder.queues) expect([name, isLadderTarget({ exchange: '', routingKey: name }, 'billing')]).toEqual([name, true]);
      expect(configuredDelayPrefix(ladder)).toBe('billing');
    }
    for (const name of ['billing.invoices', 'billing.ready.x', 'billing.v1.p11', 'billing.v1.p00.9ms', 'billing.quorum.x', 'billing.error']) {
      expect([name, isLadderTarget({ exchange: name, routingKey: '' }, 'billing')]).toEqual([name, false]);
    }
    for (const name of ['billing.invoices', 'billing.v1.p00', 'billing.quorum.v1.p03', 'billing.v1.p00.8ms']) {
      expect([name, isLadderTarget({ exchange: '', routingKey: name }, 'billing')]).toEqual([name, false]);
    }
  });
});
