import { describe, expect, it } from '@jest/globals';
import type { ConsumeMessage } from 'amqplib';
import type { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import { planDelayTopology } from '../core/delivery/delay.plan.js';
import { DelayHeader } from '../core/headers/header.names.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { DelayForwardHandler } from './delay.forwarder.js';
import type { MessageParker, ParkTarget } from './park-route.steps.js';

/** A forwarder whose publisher records when each delivery was published, and whose settle records acks. */
function forwarder() {
  const published: number[] = [];
  const acked: number[] = [];
  const publisher = { publish: async () => void published.push(Date.now()) } as unknown as ConfirmPublisher;
  const logger = { log: () => undefined, warn: () => undefined, error: () => undefined } as unknown as RetryLogger;
  const park = { errorQueue: 'x.error', redeclare: async () => undefined } as ParkTarget;
  const handler = new DelayForwardHandler(planDelayTopology('e2e.delay.unit'), publisher, {} as MessageParker, park, logger);
  const settle = { ack: () => void acked.push(Date.now()), nack: () => undefined };
  return { handler, settle, published, acked };
}

const due = (dueAt: string, ms = 2_777): ConsumeMessage =>
  ({
    content: Buffer.from('{}'),
    fields: { deliveryTag: 1, redelivered: false, exchange: '', routingKey: 'e2e.delay.unit.ready', consumerTag: 'c' },
    properties: {
      headers: { [DelayHeader.targetExchange]: 'orders', [DelayHeader.targetRoutingKey]: 'k', [DelayHeader.dueAt]: dueAt, [DelayHeader.ms]: ms },
    },
  }) as unknown as ConsumeMessage;

describe('the delay forwarder and the due time', () => {
  it('delivers a message that left the ladder early no sooner than its due time', async () => {
    const { handler, settle, published, acked } = forwarder();
    const dueAt = Date.now() + 40;
    await handler.handle(due(new Date(dueAt).toISOString()), settle, new AbortController().signal);
    expect(published).toHaveLength(1);
    expect(published[0]).toBeGreaterThanOrEqual(dueAt);
    expect(acked).toHaveLength(1);
  });

  it('holds a message whose due time is far ahead (a publisher clock ahead, a forged header) at most 100 ms in all', async () => {
    const { handler, settle, published } = forwarder();
    const start = Date.now();
    await handler.handle(due(new Date(start + 365 * 86_400_000).toISOString(), 86_400_000), settle, new AbortController().signal);
    expect(published).toHaveLength(1);
    expect(published[0] - start).toBeGreaterThanOrEqual(99);
    expect(published[0] - start).toBeLessThan(400);
  });

  it('delivers a due message at once', async () => {
    const { handler, settle, published } = forwarder();
    const start = Date.now();
    await handler.handle(due(new Date(start - 5).toISOString()), settle, new AbortController().signal);
    expect(published).toHaveLength(1);
    expect(published[0] - start).toBeLessThan(20);
  });

  it('leaves a held message unsettled when its delivery is gone while it waits', async () => {
    const { handler, settle, published, acked } = forwarder();
    const gone = new AbortController();
    const handled = handler.handle(due(new Date(Date.now() + 60).toISOString()), settle, gone.signal);
    gone.abort();
    await handled;
    expect(published).toEqual([]);
    expect(acked).toEqual([]);
  });
});
