import type { INestMicroservice } from '@nestjs/common';
import type { ConfirmChannel } from 'amqplib';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { Registry } from 'prom-client';
import { RetryClient } from 'nestjs-amqp-retry/transport';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { patternTiers, startRetryMicroservice } from '../transport/transport-app.js';

/** The value of one sample, labels in any order. */
async function sample(registry: Registry, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const base = name.replace(/_(count|sum)$/, '');
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === base);
  const values = (metric?.values ?? []) as Array<{ value: number; metricName?: string; labels: Record<string, string | number> }>;
  return values.find((v) => (v.metricName ?? base) === name && Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l))?.value;
}

describe('metrics of the microservices transport', () => {
  const suite = useSuite<INestMicroservice>('obs.transport', { extraQueues: patternTiers });

  it('labels deliveries, retries and parks with the pattern', async () => {
    const { queue } = suite;
    const registry = new Registry();
    const client = new RetryClient({ url: AMQP_URL, delayedDelivery: false, queue });
    suite.clients.push(client);
    suite.app = await startRetryMicroservice({ queue, metrics: { registry } });
    for (const id of [1, 2]) await lastValueFrom(client.emit('order.paid', { id, failures: 1 }), { defaultValue: undefined });
    await lastValueFrom(client.emit('order.created', { id: 3, nonRetryable: 'wrapped' }), { defaultValue: undefined });
    await waitFor(
      async () =>
        (await sample(registry, 'amqp_retry_deliveries_handled_total', { queue, pattern: 'order.paid' })) === 2 &&
        (await sample(registry, 'amqp_retry_messages_parked_total', { queue, pattern: 'order.created' })) === 1,
      'the events to be counted',
      15_000,
    );
    expect(await sample(registry, 'amqp_retry_deliveries_failed_total', { queue, pattern: 'order.paid' })).toBe(2);
    expect(await sample(registry, 'amqp_retry_deliveries_retried_total', { queue, pattern: 'order.paid', tier: '1' })).toBe(2);
    expect(await sample(registry, 'amqp_retry_messages_parked_total', { queue, pattern: 'order.created', reason: 'non-retryable' })).toBe(1);
    expect(await sample(registry, 'amqp_retry_handler_duration_seconds_count', { queue, pattern: 'order.created', outcome: 'parked' })).toBe(1);
    expect(await sample(registry, 'amqp_retry_deliveries_handled_total', { queue, pattern: '' })).toBeUndefined();
    expect(await sample(registry, 'amqp_retry_consumers_up', { queue })).toBe(1);
  });

  it("counts each request's handler call once, handled or failed, under the handler's pattern", async () => {
    const { queue } = suite;
    const registry = new Registry();
    const client = new RetryClient({ url: AMQP_URL, delayedDelivery: false, queue });
    suite.clients.push(client);
    suite.app = await startRetryMicroservice({ queue, metrics: { registry } });
    expect(await firstValueFrom(client.send('order.get', { id: 1 }))).toEqual({ id: 1, status: 'paid' });
    await expect(firstValueFrom(client.send('order.get', { id: -1 }))).rejects.toMatchObject({ message: 'no order -1' });
    await waitFor(
      async () =>
        (await sample(registry, 'amqp_retry_deliveries_handled_total', { queue, pattern: 'order.get' })) === 1 &&
        (await sample(registry, 'amqp_retry_deliveries_failed_total', { queue, pattern: 'order.get' })) === 1,
      'both requests to be counted',
      10_000,
    );
    const labels = { queue, pattern: 'order.get' };
    expect(await sample(registry, 'amqp_retry_handler_duration_seconds_count', { ...labels, outcome: 'handled' })).toBe(1);
    // Neither retried nor parked: a request's failure is answered to its caller.
    expect(await sample(registry, 'amqp_retry_handler_duration_seconds_count', { ...labels, outcome: 'failed' })).toBe(1);
    expect(await sample(registry, 'amqp_retry_handler_duration_seconds_count', { ...labels, outcome: 'parked' })).toBeUndefined();
    expect(await sample(registry, 'amqp_retry_deliveries_retried_total', { ...labels, tier: '1' })).toBeUndefined();
    expect(await sample(registry, 'amqp_retry_messages_parked_total', labels)).toBeUndefined();
    expect(await sample(registry, 'amqp_retry_handlers_in_flight', labels)).toBe(0);
  });

  it("labels with the handler's own pattern only: 500 spellings of one pattern and 500 unknown patterns add no series", async () => {
    const { broker, queue } = suite;
    const registry = new Registry();
    suite.app = await startRetryMicroservice({ queue, metrics: { registry } });
    // Events for @MessagePattern({ cmd: 'sum' }): JSON with 0..499 spaces is one pattern to Nest, and to its handler.
    for (let i = 0; i < 500; i++)
      broker.channel.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern: `{"cmd":${' '.repeat(i)}"sum"}`, data: [i] })));
    for (let i = 0; i < 500; i++) broker.channel.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern: `unknown.${i}`, data: i })));
    await (broker.channel as ConfirmChannel).waitForConfirms();
    const seriesOf = async () =>
      (await registry.getMetricsAsJSON())
        .flatMap((metric) =>
          (metric.values as Array<{ value: number; labels: Record<string, string | number> }>).map((v) => ({ metric: metric.name, ...v })),
        )
        .filter((v) => v.labels.queue === queue);
    const total = (series: Awaited<ReturnType<typeof seriesOf>>, metric: string) =>
      series.filter((v) => v.metric === metric).reduce((sum, v) => sum + v.value, 0);
    const series = await waitFor(
      async () => {
        const now = await seriesOf();
        const done = total(now, 'amqp_retry_deliveries_handled_total') === 500 && total(now, 'amqp_retry_messages_parked_total') === 500;
        return done && now;
      },
      '1,000 messages handled or parked',
      60_000,
    );
    expect(await sample(registry, 'amqp_retry_deliveries_handled_total', { queue, pattern: '{"cmd":"sum"}' })).toBe(500);
    expect(await sample(registry, 'amqp_retry_messages_parked_total', { queue, pattern: '', reason: 'no-handler' })).toBe(500);
    const patterns = new Set(series.filter((v) => 'pattern' in v.labels).map((v) => v.labels.pattern));
    expect([...patterns].sort()).toEqual(['', '{"cmd":"sum"}']);
    // handled, in flight, duration (buckets, sum, count) for the one pattern; parked for the unmatched; consumers up.
    expect(series.length).toBeLessThanOrEqual(30);
  });
});
