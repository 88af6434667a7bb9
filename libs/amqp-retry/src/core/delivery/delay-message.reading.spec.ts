import { describe, expect, it } from '@jest/globals';
import {
  DELAY_LADDER,
  earlyByMs,
  forwardedProperties,
  isDelayLadderQueue,
  ladderProperties,
  planDelayedPublish,
  planDelayTopology,
  readPublishDelay,
  readDelayTarget,
  withoutDelayDeaths,
} from './delay.plan.js';
import type { MessageProperties } from 'amqplib';
import { DelayHeader } from '../headers/header.names.js';

/** What the forwarder delivers a due message carrying `headers` with, as far as the delay headers go. */
const forwarded = (headers: Record<string, unknown>) => {
  const { headers: delivered, expiration, CC, BCC } = forwardedProperties({ headers } as unknown as MessageProperties, DELAY_LADDER.prefix);
  return { headers: delivered, expiration, CC, BCC };
};

const target = { exchange: 'orders', routingKey: 'order.created.eu' };
const NOW = Date.parse('2030-01-01T00:00:00.000Z');

describe('readDelayTarget', () => {
  it('reads the target the plan wrote, including the default exchange', () => {
    const plan = planDelayedPublish(10, { exchange: '', routingKey: 'some-queue' }, NOW);
    if (plan.kind !== 'ladder') throw new Error('expected the ladder');
    expect(readDelayTarget({ other: 1, ...plan.headers })).toEqual({ exchange: '', routingKey: 'some-queue' });
  });

  it.each([
    ['no headers', undefined],
    ['no routing key', { [DelayHeader.targetExchange]: 'orders' }],
    ['a non-string exchange', { [DelayHeader.targetExchange]: 7, [DelayHeader.targetRoutingKey]: 'k' }],
  ])('gives undefined for %s', (_, headers) => {
    expect(readDelayTarget(headers)).toBeUndefined();
  });
});

describe('earlyByMs', () => {
  const due = (offsetMs: number, delayMs: unknown = 2_777) => ({
    [DelayHeader.dueAt]: new Date(NOW + offsetMs).toISOString(),
    [DelayHeader.ms]: delayMs,
  });

  it('waits for the due time of a message that left the ladder early, and not for one that is due', () => {
    expect(earlyByMs(due(11), NOW)).toBe(11);
    expect(earlyByMs(due(0), NOW)).toBe(0);
    expect(earlyByMs(due(-500), NOW)).toBe(0);
  });

  it('waits at most 20 ms plus 2 % of the delay, and at most 100 ms: a publisher clock ahead holds nothing long', () => {
    expect(earlyByMs(due(5_000, 2_777), NOW)).toBe(Math.ceil(20 + 2_777 / 50));
    expect(earlyByMs(due(5_000, 10_000), NOW)).toBe(100);
    expect(earlyByMs(due(60_000, 150), NOW)).toBe(23);
    expect(earlyByMs(due(3_600_000, 86_400_000), NOW)).toBe(100);
    expect(earlyByMs(due(5_000, 'x'), NOW)).toBe(20);
  });

  it('waits for nothing when the due time is missing or malformed', () => {
    expect(earlyByMs({}, NOW)).toBe(0);
    for (const bad of ['soon', 42, null, Buffer.from('2030-01-01T00:00:01.000Z')]) expect(earlyByMs({ [DelayHeader.dueAt]: bad }, NOW)).toBe(0);
  });
});

describe('withoutDelayDeaths', () => {
  const rejected = { queue: 'orders.q', reason: 'rejected', count: 2 };
  const level = (ttl: number) => ({ queue: `amqp-retry.delay.v1.p00.${ttl}ms`, reason: 'expired', count: 1 });

  it('drops the ladder entries and keeps the others', () => {
    const headers = {
      'x-death': [level(1), rejected, null, 'junk', level(2)],
      'x-first-death-queue': 'orders.q',
      'x-first-death-reason': 'rejected',
      'x-first-death-exchange': 'orders',
      [DelayHeader.ms]: 3,
    };
    expect(withoutDelayDeaths(headers)).toEqual({ ...headers, 'x-death': [rejected, null, 'junk'] });
    expect(headers['x-death']).toHaveLength(5);
  });

  it('removes x-death and the first and last death headers when they only describe the ladder', () => {
    const headers = {
      'x-death': [level(4), level(2)],
      'x-first-death-queue': level(4).queue,
      'x-first-death-reason': 'expired',
      'x-first-death-exchange': 'amqp-retry.delay.v1.p02',
      'x-last-death-queue': level(2).queue,
      'x-last-death-reason': 'expired',
      'x-last-death-exchange': 'amqp-retry.delay.v1.p01',
      app: 'kept',
    };
    expect(withoutDelayDeaths(headers)).toEqual({ app: 'kept' });
  });

  it("drops the quorum ready queue's delivery counts, which a quorum handler queue would take for its own", () => {
    const headers = { tenant: 'acme', 'x-delivery-count': 12, 'x-acquired-count': 13 };
    expect(withoutDelayDeaths(headers)).toEqual({ tenant: 'acme' });
    expect(headers['x-delivery-count']).toBe(12); // the delivery's own headers are left as they were
  });

  it('leaves headers without x-death alone', () => {
    expect(withoutDelayDeaths({ app: 'kept' })).toEqual({ app: 'kept' });
  });
});

describe('readPublishDelay', () => {
  it.each([
    [0, 0],
    [1500, 1500],
    [0.3, 1],
    ['90s', 90_000],
    ['30m', 1_800_000],
    ['3d', 259_200_000],
    ['30d', 2_592_000_000],
  ])('reads %p as %p ms', (delay, ms) => {
    expect(readPublishDelay(delay)).toBe(ms);
  });

  it.each([
    [-1, 'Invalid delay -1: use milliseconds (1500)'],
    [Number.NaN, 'Invalid delay NaN: use milliseconds (1500)'],
    [Number.POSITIVE_INFINITY, 'Invalid delay Infinity: use milliseconds (1500)'],
    [
      'soon',
      `Invalid delay "soon": use milliseconds (1500) or a duration such as '250ms', '90s', '30m', '3d', from 0 to 4294967295 ms (about 49.7 days).`,
    ],
    ['60d', 'Invalid delay 5184000000 ms: a delay must be a finite number of milliseconds from 0 to 4294967295 (about 49.7 days).'],
  ])('rejects %p with a RangeError naming it and the range', (delay, message) => {
    expect(() => readPublishDelay(delay)).toThrow(RangeError);
    expect(() => readPublishDelay(delay)).toThrow(message);
  });
});

describe('an expiration through the ladder', () => {
  const plan = planDelayedPublish(3000, target, NOW);
  const headers = plan.kind === 'ladder' ? plan.headers : (undefined as never);

  it('leaves the ladder copy without expiration, carried in a header instead, persistent and mandatory', () => {
    const properties = { expiration: '200', persistent: false, messageId: 'm', headers: { tenant: 'acme' } };
    const copy = ladderProperties(properties, headers);
    expect(copy.expiration).toBeUndefined();
    expect(copy).toMatchObject({ persistent: true, mandatory: true, messageId: 'm' });
    expect(copy.headers).toEqual({ tenant: 'acme', ...headers, [DelayHeader.expiration]: '200' });
    expect(properties).toEqual({ expiration: '200', persistent: false, messageId: 'm', headers: { tenant: 'acme' } }); // untouched
  });

  it('carries a numeric expiration as digits, and none when there is none (a stale header of the caller is dropped)', () => {
    expect(ladderProperties({ expiration: 50 }, headers).headers?.[DelayHeader.expiration]).toBe('50');
    const copy = ladderProperties({ headers: { [DelayHeader.expiration]: '10' } }, headers);
    expect(copy.headers).toEqual({ ...headers });
  });

  it.each([['-1'], ['soon'], ['1.5'], [''], [-5], [2 ** 32], [Number.NaN], [{}]])('refuses an expiration of %p with a RangeError', (expiration) => {
    expect(() => ladderProperties({ expiration: expiration as string }, headers)).toThrow(RangeError);
  });

  it('restores the carried expiration as the property and drops its header', () => {
    expect(forwarded({ tenant: 'acme', [DelayHeader.expiration]: '200' })).toEqual({ headers: { tenant: 'acme' }, expiration: '200' });
    expect(forwarded({ tenant: 'acme' })).toEqual({ headers: { tenant: 'acme' } });
  });

  it('delivers without an expiration when the carried one is malformed (a message published by another client)', () => {
    for (const bad of ['-3', 'x', 7.5, Buffer.from('200'), null])
      expect(forwarded({ [DelayHeader.expiration]: bad, a: 1 })).toEqual({ headers: { a: 1 } });
  });
});

describe('CC and BCC through the ladder', () => {
  const plan = planDelayedPublish(3000, target, NOW);
  const headers = plan.kind === 'ladder' ? plan.headers : (undefined as never);

  it('sends the ladder copy without CC or BCC, their keys carried in headers of the library (properties over headers)', () => {
    // A CC key would be routed at every level: 'a.b.c.d.e.f.g.h.0' matches position 2's `0` binding, past its wait.
    const copy = ladderProperties({ CC: 'a.b.c.d.e.f.g.h.0', BCC: ['audit', 'archive'], headers: { tenant: 'acme', CC: ['ignored'] } }, headers);
    expect(copy).not.toHaveProperty('CC');
    expect(copy).not.toHaveProperty('BCC');
    expect(copy.headers).toEqual({ tenant: 'acme', ...headers, [DelayHeader.cc]: ['a.b.c.d.e.f.g.h.0'], [DelayHeader.bcc]: ['audit', 'archive'] });
    expect(ladderProperties({ headers: { CC: ['us'], BCC: 'audit' } }, headers).headers).toEqual({
      ...headers,
      [DelayHeader.cc]: ['us'],
      [DelayHeader.bcc]: ['audit'],
    });
  });

  it('leaves a CC header of a copy already in the ladder for the forwarder to route', () => {
    expect(forwarded({ a: 1, CC: ['eu'] })).toEqual({ headers: { a: 1, CC: ['eu'] } });
    expect(forwarded({ a: 1, CC: ['eu'], [DelayHeader.bcc]: ['audit'] })).toEqual({ headers: { a: 1, CC: ['eu'] }, BCC: ['audit'] });
  });

  it('drops stale carried keys of the caller, and carries none for none', () => {
    const copy = ladderProperties({ headers: { [DelayHeader.cc]: ['x'], [DelayHeader.bcc]: ['y'] }, CC: [] }, headers);
    expect(copy.headers).toEqual({ ...headers });
  });

  it('restores the carried keys as CC and BCC and drops their headers, whatever they hold', () => {
    expect(forwarded({ a: 1, [DelayHeader.cc]: ['eu'], [DelayHeader.bcc]: [Buffer.from('audit')] })).toEqual({
      headers: { a: 1 },
      CC: ['eu'],
      BCC: ['audit'],
    });
    expect(forwarded({ a: 1, [DelayHeader.bcc]: 'not a list' })).toEqual({ headers: { a: 1 } });
    expect(forwardedProperties({ headers: { a: 1 } } as unknown as MessageProperties, DELAY_LADDER.prefix).mandatory).toBe(true);
  });
});

describe('isDelayLadderQueue', () => {
  it("knows a ladder's ready queue, classic or quorum, whatever its prefix", () => {
    for (const topology of [planDelayTopology(DELAY_LADDER.prefix), planDelayTopology('billing.delay', 'quorum')]) {
      expect(isDelayLadderQueue({ queue: topology.readyQueue, errorQueue: topology.errorQueue, tiers: [] })).toBe(true);
    }
  });

  it('takes a handler queue for what it is, even one named like a ready queue', () => {
    expect(isDelayLadderQueue({ queue: 'orders', errorQueue: 'orders.error', tiers: ['orders.retry.1.1s.ab'] })).toBe(false);
    expect(isDelayLadderQueue({ queue: 'orders.ready', errorQueue: 'orders.ready.error', tiers: [] })).toBe(false);
    expect(isDelayLadderQueue({ queue: 'x.ready', errorQueue: 'x.error', tiers: ['x.ready.retry.1.1s.ab'] })).toBe(false);
  });
});
