import type { MessageProperties } from 'amqplib';
import type { XDeath } from '../delivery/x-death.parser.js';
import { firstFailureHeaders, firstRoute, movedFirstFailures, FIRST_FAILURE_HEADERS } from '../delivery/first-failure.headers.js';
import { forwardedProperties, ladderProperties, planDelayedPublish, readDelayTarget } from '../delivery/delay.plan.js';
import { BROKER_DEATH_HEADERS, parkedPublishOptions } from '../parking/parked-message.headers.js';
import { PARKING_HEADERS, REPLAY_ROUTE_HEADERS, replayPublishOptions, toParkedView } from '../parking/parked.view.js';
import { sampleProperties } from '../../testing/message-properties.fixture.js';
import { BrokerHeader, DelayHeader, FirstFailureHeader, ParkedHeader, QueueArgument } from './header.names.js';

const deaths: XDeath[] = [
  { queue: 'orders', reason: 'rejected', count: 2, exchange: 'shop', routingKeys: ['order.created'] },
  { queue: 'orders.retry.2', reason: 'expired', count: 1, exchange: 'orders.retry-dlx', routingKeys: ['orders.retry.2'] },
];
const xDeath = deaths.map(({ routingKeys, ...d }) => ({ ...d, 'routing-keys': routingKeys }));

describe('the header vocabulary', () => {
  it('names each header and queue argument once, with the wire names the README documents', () => {
    const all = [BrokerHeader, ParkedHeader, FirstFailureHeader, DelayHeader, QueueArgument].flatMap((group) => Object.values(group));
    expect(new Set(all).size).toBe(all.length);
    // Spelled out here on purpose: renaming a constant's value breaks every parked message and tool that reads it.
    expect(ParkedHeader).toEqual({
      reason: 'x-parked-reason',
      parkedAt: 'x-parked-at',
      id: 'x-parked-id',
      droppedHeaders: 'x-parked-dropped-headers',
      exceptionMessage: 'x-exception-message',
      exceptionStack: 'x-exception-stack',
      originalQueue: 'x-original-queue',
      originalExchange: 'x-original-exchange',
      originalRoutingKey: 'x-original-routing-key',
      originalExpiration: 'x-original-expiration',
      originalUserId: 'x-original-user-id',
      retryAttempts: 'x-retry-attempts',
      deathHistory: 'x-retry-death-history',
      replayedAt: 'x-replayed-at',
    });
    expect(Object.values(FirstFailureHeader)).toEqual(['x-retry-first-failure', 'x-retry-first-exchange', 'x-retry-first-routing-key']);
    expect(Object.values(DelayHeader)).toEqual([
      'x-delay-target-exchange',
      'x-delay-target-routing-key',
      'x-delay-ms',
      'x-delay-due-at',
      'x-delay-expiration',
      'x-delay-cc',
      'x-delay-bcc',
      'x-delay-given-back',
    ]);
    expect(BrokerHeader.death).toBe('x-death');
  });

  it('parked headers: what the parker writes, the parked-messages view reads back', () => {
    const properties = sampleProperties({ expiration: '60000', userId: 'shop', headers: { tenant: 'a', 'x-death': xDeath } });
    const now = new Date('2026-11-24T20:00:00.000Z');
    const error = new Error('payment declined');
    const options = parkedPublishOptions({
      reason: 'exhausted',
      error,
      handlerCalls: 3,
      queue: 'orders',
      deaths,
      deliveredExchange: 'orders.retry-return',
      deliveredRoutingKey: 'orders.retry.2',
      properties,
      now,
      id: 'park-1',
    });
    const headers = options.headers as Record<string, unknown>;
    const written = Object.values(ParkedHeader).filter((name) => name in headers);
    // Every parking header but the ones only a replay or an oversized park writes.
    expect(written.sort()).toEqual(
      Object.values(ParkedHeader)
        .filter((name) => name !== ParkedHeader.replayedAt && name !== ParkedHeader.droppedHeaders)
        .sort(),
    );
    const view = toParkedView({ content: Buffer.from('{"id":7}'), properties: { ...properties, ...options, headers } as never }, 'orders.error');
    expect(view).toMatchObject({
      id: 'park-1',
      queue: 'orders',
      reason: 'exhausted',
      error: 'payment declined',
      parkedAt: now,
      attempts: 3,
      deaths: [expect.objectContaining({ queue: 'orders', reason: 'rejected' }), expect.objectContaining({ queue: 'orders.retry.2' })],
    });
    expect(headers).toMatchObject({
      [ParkedHeader.originalExchange]: 'shop',
      [ParkedHeader.originalRoutingKey]: 'order.created',
      [ParkedHeader.originalExpiration]: '60000',
      [ParkedHeader.originalUserId]: 'shop',
      tenant: 'a',
    });
    // The broker's counters stay out of the copy, and a replay drops every parking header and stamps its own.
    for (const name of BROKER_DEATH_HEADERS) expect(headers).not.toHaveProperty([name]);
    const replayed = replayPublishOptions({ ...properties, headers } as never, { queue: 'orders', now }).headers as Record<string, unknown>;
    for (const name of written.filter((name) => !REPLAY_ROUTE_HEADERS.includes(name))) expect(replayed).not.toHaveProperty([name]);
    expect(replayed).toMatchObject({ [ParkedHeader.replayedAt]: now.toISOString(), tenant: 'a' });
    // ... but the route it was first published with, which firstRoute reads back on the replayed delivery.
    expect(REPLAY_ROUTE_HEADERS.filter((name) => name in replayed)).toEqual([...REPLAY_ROUTE_HEADERS]);
    expect(firstRoute(replayed, [], 'orders', { exchange: '', routingKey: 'orders' })).toEqual({ exchange: 'shop', routingKey: 'order.created' });
  });

  it('every parking header is in the list a replay strips, and every broker death header in the list a park strips', () => {
    expect([...PARKING_HEADERS].sort()).toEqual(
      Object.values(ParkedHeader)
        .filter((name) => name !== ParkedHeader.replayedAt)
        .sort(),
    );
    // Every header the broker writes, x-acquired-count (RabbitMQ 4.3) included: a parked copy carries no count of its.
    expect([...BROKER_DEATH_HEADERS].sort()).toEqual([...Object.values(BrokerHeader), ...Object.values(FirstFailureHeader)].sort());
    expect([...FIRST_FAILURE_HEADERS].sort()).toEqual(Object.values(FirstFailureHeader).sort());
  });

  it('first-failure headers: what the tier router writes, the attempt count and the first route read back', () => {
    const headers = firstFailureHeaders({ tenant: 'a' }, 'orders', { exchange: 'shop', routingKey: 'order.created' });
    expect(
      Object.keys(headers)
        .filter((name) => name.startsWith('x-'))
        .sort(),
    ).toEqual(Object.values(FirstFailureHeader).sort());
    const waited: XDeath[] = [{ queue: 'orders.retry.1.1000.abc123', reason: 'expired', count: 1, exchange: 'orders.retry-dlx', routingKeys: ['t'] }];
    expect(movedFirstFailures(headers, 'orders', waited)).toBe(1);
    expect(firstRoute(headers, waited, 'orders', { exchange: 'orders.retry-return', routingKey: 'x' })).toEqual({
      exchange: 'shop',
      routingKey: 'order.created',
    });
  });

  it('delay headers: what the publisher writes, the forwarder reads back', () => {
    const plan = planDelayedPublish(1_500, { exchange: 'shop', routingKey: 'order.created' }, Date.parse('2026-11-24T20:00:00.000Z'));
    if (plan.kind !== 'ladder') throw new Error('a 1.5 s delay goes through the ladder');
    const options = ladderProperties({ expiration: '30000', headers: { tenant: 'a' } }, plan.headers);
    const headers = options.headers as Record<string, unknown>;
    expect(headers).toMatchObject({ [DelayHeader.ms]: 1_500, [DelayHeader.dueAt]: '2026-11-24T20:00:01.500Z', tenant: 'a' });
    expect(readDelayTarget(headers)).toEqual({ exchange: 'shop', routingKey: 'order.created' });
    const forwarded = forwardedProperties({ headers } as unknown as MessageProperties, 'amqp-retry.delay');
    expect(forwarded.expiration).toBe('30000');
    expect(forwarded.headers).not.toHaveProperty([DelayHeader.expiration]);
  });
});
