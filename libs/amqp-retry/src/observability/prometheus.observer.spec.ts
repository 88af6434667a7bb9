import * as prom from 'prom-client';
import { PrometheusObserver } from './prometheus.observer.js';
import type { DeliveryEvent } from '../core/observe/retry.observer.js';

const delivery = (queue: string, pattern?: string, properties: Record<string, unknown> = {}) =>
  ({ queue, pattern, attempt: 1, maxAttempts: 3, message: { properties } }) as unknown as DeliveryEvent;
const value = async (registry: prom.Registry, name: string, labels: Record<string, string>) => {
  const base = name.replace(/_(count|sum|bucket)$/, '');
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name || m.name === base);
  const values = (metric?.values ?? []) as Array<{ value: number; metricName?: string; labels: Record<string, string | number> }>;
  return values.find((v) => (v.metricName ?? metric?.name) === name && Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l))?.value;
};

describe('PrometheusObserver', () => {
  it('counts outcomes by queue, pattern, tier and reason, and tracks in-flight handlers', async () => {
    const registry = new prom.Registry();
    const o = new PrometheusObserver(prom, { registry });
    o.deliveryStarted(delivery('orders'));
    o.deliveryStarted(delivery('orders'));
    expect(await value(registry, 'amqp_retry_handlers_in_flight', { queue: 'orders', pattern: '' })).toBe(2);
    o.handled({ ...delivery('orders'), durationMs: 12 });
    o.failed({ ...delivery('orders'), durationMs: 30, error: new Error('x'), retryTier: 2, retryDelayMs: 10_000 });
    o.deliveryStarted(delivery('rpc', 'sum'));
    o.failed({ ...delivery('rpc', 'sum'), durationMs: 1, error: new Error('x') });
    o.parked({ queue: 'rpc', pattern: 'sum', errorQueue: 'rpc.error', reason: 'non-retryable', error: 1, handlerCalls: 1, message: {} as never });
    expect(await value(registry, 'amqp_retry_handlers_in_flight', { queue: 'orders', pattern: '' })).toBe(0);
    expect(await value(registry, 'amqp_retry_deliveries_handled_total', { queue: 'orders' })).toBe(1);
    expect(await value(registry, 'amqp_retry_deliveries_failed_total', { queue: 'orders' })).toBe(1);
    expect(await value(registry, 'amqp_retry_deliveries_retried_total', { queue: 'orders', tier: '2' })).toBe(1);
    expect(await value(registry, 'amqp_retry_messages_parked_total', { queue: 'rpc', pattern: 'sum', reason: 'non-retryable' })).toBe(1);
    expect(await value(registry, 'amqp_retry_handler_duration_seconds_count', { queue: 'orders', outcome: 'retried' })).toBe(1);
    expect(await value(registry, 'amqp_retry_handler_duration_seconds_sum', { queue: 'orders', outcome: 'handled' })).toBeCloseTo(0.012);
    expect(await value(registry, 'amqp_retry_handler_duration_seconds_count', { queue: 'rpc', pattern: 'sum', outcome: 'parked' })).toBe(1);
  });

  it('observes critical time from the AMQP timestamp of each handled message, and none for a message without one', async () => {
    const registry = new prom.Registry();
    const o = new PrometheusObserver(prom, { registry, criticalTimeBuckets: [1, 60, 3600] });
    const secondsAgo = (seconds: number) => Math.floor(Date.now() / 1000) - seconds;
    o.handled({ ...delivery('orders', undefined, { timestamp: secondsAgo(120) }), durationMs: 5 });
    o.handled({ ...delivery('orders', undefined, { timestamp: Date.now() - 30_000 }), durationMs: 5 }); // in ms: read as ms
    o.handled({ ...delivery('orders'), durationMs: 5 });
    expect(await value(registry, 'amqp_retry_critical_time_seconds_count', { queue: 'orders' })).toBe(2);
    expect(await value(registry, 'amqp_retry_critical_time_seconds_bucket', { queue: 'orders', le: '60' })).toBe(1);
    expect(await value(registry, 'amqp_retry_critical_time_seconds_bucket', { queue: 'orders', le: '3600' })).toBe(2);
    expect(await value(registry, 'amqp_retry_critical_time_seconds_sum', { queue: 'orders' })).toBeGreaterThanOrEqual(149);
  });

  it("shows each handler queue's state as a number and counts its changes by the state it went to", async () => {
    const registry = new prom.Registry();
    const o = new PrometheusObserver(prom, { registry });
    o.queueStateChanged({ queue: 'orders', from: 'running', to: 'open', reason: '20 calls in a row failed' });
    expect(await value(registry, 'amqp_retry_queue_state', { queue: 'orders' })).toBe(2);
    o.queueStateChanged({ queue: 'orders', from: 'open', to: 'half-open', reason: 'trial' });
    o.queueStateChanged({ queue: 'orders', from: 'half-open', to: 'open', reason: 'trial failed' });
    o.queueStateChanged({ queue: 'orders', from: 'open', to: 'paused', reason: 'paused by alice', by: 'alice' });
    expect(await value(registry, 'amqp_retry_queue_state', { queue: 'orders' })).toBe(3);
    expect(await value(registry, 'amqp_retry_queue_state_changes_total', { queue: 'orders', to: 'open' })).toBe(2);
    expect(await value(registry, 'amqp_retry_queue_state_changes_total', { queue: 'orders', to: 'paused' })).toBe(1);
  });

  it("shows each partition's depth and whether this instance consumes it", async () => {
    const registry = new prom.Registry();
    const o = new PrometheusObserver(prom, { registry });
    o.partitionObserved({ queue: 'accounts', partition: 3, depth: 42, consumers: 2, owned: true });
    o.partitionObserved({ queue: 'accounts', partition: 4, depth: 0, consumers: 1, owned: false });
    expect(await value(registry, 'amqp_retry_partition_depth', { queue: 'accounts', partition: '3' })).toBe(42);
    expect(await value(registry, 'amqp_retry_partition_owned', { queue: 'accounts', partition: '3' })).toBe(1);
    expect(await value(registry, 'amqp_retry_partition_owned', { queue: 'accounts', partition: '4' })).toBe(0);
  });

  it('shares the metrics of a registry that has them already instead of failing', async () => {
    const registry = new prom.Registry();
    const first = new PrometheusObserver(prom, { registry });
    const second = new PrometheusObserver(prom, { registry });
    first.connectionUp({ role: 'consume' });
    second.connectionLost({ role: 'publish' });
    expect(await value(registry, 'amqp_retry_connection_up', { role: 'consume' })).toBe(1);
    expect(await value(registry, 'amqp_retry_connection_up', { role: 'publish' })).toBe(0);
  });

  it('registers nothing in the default registry when given one', () => {
    const registry = new prom.Registry();
    new PrometheusObserver(prom, { registry });
    expect(prom.register.getSingleMetric('amqp_retry_deliveries_handled_total')).toBeUndefined();
    expect(registry.getSingleMetric('amqp_retry_deliveries_handled_total')).toBeDefined();
  });

  it('reports the outbox by table: sent, parked, backlog and relay lag', async () => {
    const registry = new prom.Registry();
    const o = new PrometheusObserver(prom, { registry });
    o.outboxSent({ table: 't', exchange: 'e', routingKey: 'k', lagMs: 30 });
    o.outboxSent({ table: 't', exchange: 'e', routingKey: 'k', lagMs: 10 });
    o.outboxParked({ table: 't', exchange: 'gone', routingKey: 'k', reason: 'refused' });
    o.outboxBacklog({ table: 't', waiting: 7, oldestAgeMs: 2_500, parked: 1, tableBytes: 40_960 });
    expect(await value(registry, 'amqp_retry_outbox_sent_total', { table: 't' })).toBe(2);
    expect(await value(registry, 'amqp_retry_outbox_parked_total', { table: 't' })).toBe(1);
    expect(await value(registry, 'amqp_retry_outbox_rows_waiting', { table: 't' })).toBe(7);
    expect(await value(registry, 'amqp_retry_outbox_oldest_age_seconds', { table: 't' })).toBe(2.5);
    expect(await value(registry, 'amqp_retry_outbox_rows_parked', { table: 't' })).toBe(1);
    expect(await value(registry, 'amqp_retry_outbox_table_bytes', { table: 't' })).toBe(40_960);
    expect(await value(registry, 'amqp_retry_outbox_relay_lag_seconds_count', { table: 't' })).toBe(2);
    expect(await value(registry, 'amqp_retry_outbox_relay_lag_seconds_sum', { table: 't' })).toBeCloseTo(0.04);
  });
});
