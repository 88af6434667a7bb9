import type * as Prom from 'prom-client';
import type { MetricsOptions } from './metrics.options.js';
import type {
  ConnectionEvent,
  ConsumerDownEvent,
  ConsumerEvent,
  DeliveryEvent,
  DeliveryFailedEvent,
  DeliveryHandledEvent,
  MessageParkedEvent,
  PublishRejectedEvent,
  RetryObserver,
} from './retry-observer.js';

/** The metric names, Prometheus style; docs/design.md maps them to the OpenTelemetry messaging metrics. */
export const METRIC_NAMES = {
  handled: 'amqp_retry_deliveries_handled_total',
  failed: 'amqp_retry_deliveries_failed_total',
  retried: 'amqp_retry_deliveries_retried_total',
  parked: 'amqp_retry_messages_parked_total',
  delayedPublished: 'amqp_retry_delayed_published_total',
  forwarded: 'amqp_retry_delayed_forwarded_total',
  publishRejected: 'amqp_retry_publishes_rejected_total',
  duration: 'amqp_retry_handler_duration_seconds',
  inFlight: 'amqp_retry_handlers_in_flight',
  consumersUp: 'amqp_retry_consumers_up',
  connectionUp: 'amqp_retry_connection_up',
} as const;

type Prometheus = typeof Prom;

/**
 * Counts what the engine reports into prom-client metrics. A metric of the same name already in the registry (a
 * second application in the process, a test) is shared rather than registered twice, which prom-client refuses.
 */
export class PrometheusObserver implements RetryObserver {
  private readonly handledTotal: Prom.Counter<'queue' | 'pattern'>;
  private readonly failedTotal: Prom.Counter<'queue' | 'pattern'>;
  private readonly retriedTotal: Prom.Counter<'queue' | 'pattern' | 'tier'>;
  private readonly parkedTotal: Prom.Counter<'queue' | 'pattern' | 'reason'>;
  private readonly delayedTotal: Prom.Counter;
  private readonly forwardedTotal: Prom.Counter;
  private readonly rejectedTotal: Prom.Counter<'kind'>;
  private readonly duration: Prom.Histogram<'queue' | 'pattern' | 'outcome'>;
  private readonly inFlight: Prom.Gauge<'queue' | 'pattern'>;
  private readonly consumers: Prom.Gauge<'queue'>;
  private readonly connections: Prom.Gauge<'role'>;

  constructor(prom: Prometheus, options: MetricsOptions = {}) {
    const registers = [(options.registry ?? prom.register) as Prom.Registry];
    const existing = (name: string) => registers[0].getSingleMetric(name);
    const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
      (existing(name) as Prom.Counter<L> | undefined) ?? new prom.Counter<L>({ name, help, labelNames, registers });
    const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
      (existing(name) as Prom.Gauge<L> | undefined) ?? new prom.Gauge<L>({ name, help, labelNames, registers });
    const byQueue = ['queue', 'pattern'] as const;
    this.handledTotal = counter(METRIC_NAMES.handled, 'Deliveries whose handler returned (acked)', byQueue);
    this.failedTotal = counter(METRIC_NAMES.failed, 'Handler calls that threw (retried or parked)', byQueue);
    this.retriedTotal = counter(METRIC_NAMES.retried, 'Failed deliveries sent to a retry tier (1 = the first delay)', [...byQueue, 'tier']);
    this.parkedTotal = counter(METRIC_NAMES.parked, 'Messages parked in an error queue, by reason', [...byQueue, 'reason']);
    this.delayedTotal = counter(METRIC_NAMES.delayedPublished, 'Delayed messages that entered the delay ladder', []);
    this.forwardedTotal = counter(METRIC_NAMES.forwarded, 'Due delayed messages forwarded to their target', []);
    this.rejectedTotal = counter(METRIC_NAMES.publishRejected, 'Publishes the broker refused, returned or never confirmed', ['kind']);
    this.duration =
      (existing(METRIC_NAMES.duration) as Prom.Histogram<'queue' | 'pattern' | 'outcome'> | undefined) ??
      new prom.Histogram({
        name: METRIC_NAMES.duration,
        help: 'How long handlers ran, by outcome (handled, retried, parked)',
        labelNames: [...byQueue, 'outcome'],
        ...(options.durationBuckets && { buckets: options.durationBuckets }),
        registers,
      });
    this.inFlight = gauge(METRIC_NAMES.inFlight, 'Handlers running now', byQueue);
    this.consumers = gauge(METRIC_NAMES.consumersUp, '1 while a consumer consumes the queue, else 0', ['queue']);
    this.connections = gauge(METRIC_NAMES.connectionUp, '1 while the connection (consume or publish) is up, else 0', ['role']);
  }

  deliveryStarted(e: DeliveryEvent): void {
    this.inFlight.inc({ queue: e.queue, pattern: e.pattern ?? '' });
  }

  handled(e: DeliveryHandledEvent): void {
    const labels = { queue: e.queue, pattern: e.pattern ?? '' };
    this.inFlight.dec(labels);
    this.handledTotal.inc(labels);
    this.duration.observe({ ...labels, outcome: 'handled' }, e.durationMs / 1000);
  }

  failed(e: DeliveryFailedEvent): void {
    const labels = { queue: e.queue, pattern: e.pattern ?? '' };
    this.inFlight.dec(labels);
    this.failedTotal.inc(labels);
    if (e.retryTier !== undefined) this.retriedTotal.inc({ ...labels, tier: String(e.retryTier) });
    this.duration.observe({ ...labels, outcome: e.retryTier === undefined ? 'parked' : 'retried' }, e.durationMs / 1000);
  }

  parked(e: MessageParkedEvent): void {
    this.parkedTotal.inc({ queue: e.queue, pattern: e.pattern ?? '', reason: e.reason });
  }

  delayedPublished(): void {
    this.delayedTotal.inc();
  }

  forwarded(): void {
    this.forwardedTotal.inc();
  }

  publishRejected(e: PublishRejectedEvent): void {
    this.rejectedTotal.inc({ kind: e.kind });
  }

  connectionUp(e: ConnectionEvent): void {
    this.connections.set({ role: e.role }, 1);
  }

  connectionLost(e: ConnectionEvent): void {
    this.connections.set({ role: e.role }, 0);
  }

  consumerUp(e: ConsumerEvent): void {
    this.consumers.set({ queue: e.queue }, 1);
  }

  consumerDown(e: ConsumerDownEvent): void {
    this.consumers.set({ queue: e.queue }, 0);
  }
}
