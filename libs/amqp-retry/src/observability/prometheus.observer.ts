import type * as Prom from 'prom-client';
import type { MetricsOptions } from '../core/observe/metrics.options.js';
import { QUEUE_STATE_VALUE } from '../core/breaker/queue.state.js';
import { publishedAt } from '../core/message/message.properties.js';
import type {
  ConnectionEvent,
  ConsumerDownEvent,
  ConsumerEvent,
  DeliveryEvent,
  DeliveryFailedEvent,
  DeliveryHandledEvent,
  MessageParkedEvent,
  MessageDroppedEvent,
  OutboxBacklogEvent,
  OutboxParkedEvent,
  OutboxSentEvent,
  PartitionObservedEvent,
  PublishRejectedEvent,
  QueueStateEvent,
  RetryObserver,
} from '../core/observe/retry.observer.js';

/** The metric names, Prometheus style; docs/design.md maps them to the OpenTelemetry messaging metrics. */
export const METRIC_NAMES = {
  handled: 'amqp_retry_deliveries_handled_total',
  failed: 'amqp_retry_deliveries_failed_total',
  retried: 'amqp_retry_deliveries_retried_total',
  parked: 'amqp_retry_messages_parked_total',
  dropped: 'amqp_retry_messages_dropped_total',
  delayedPublished: 'amqp_retry_delayed_published_total',
  forwarded: 'amqp_retry_delayed_forwarded_total',
  publishRejected: 'amqp_retry_publishes_rejected_total',
  duration: 'amqp_retry_handler_duration_seconds',
  criticalTime: 'amqp_retry_critical_time_seconds',
  inFlight: 'amqp_retry_handlers_in_flight',
  consumersUp: 'amqp_retry_consumers_up',
  connectionUp: 'amqp_retry_connection_up',
  outboxSent: 'amqp_retry_outbox_sent_total',
  outboxParked: 'amqp_retry_outbox_parked_total',
  outboxWaiting: 'amqp_retry_outbox_rows_waiting',
  outboxOldest: 'amqp_retry_outbox_oldest_age_seconds',
  outboxParkedRows: 'amqp_retry_outbox_rows_parked',
  outboxTableBytes: 'amqp_retry_outbox_table_bytes',
  outboxLag: 'amqp_retry_outbox_relay_lag_seconds',
  queueState: 'amqp_retry_queue_state',
  queueStateChanges: 'amqp_retry_queue_state_changes_total',
  partitionDepth: 'amqp_retry_partition_depth',
  partitionOwned: 'amqp_retry_partition_owned',
} as const;

/** Critical time's buckets, in seconds: from a message handled at once to one retried for hours. */
const CRITICAL_TIME_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600];

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
  private readonly droppedTotal: Prom.Counter<'queue' | 'reason'>;
  private readonly delayedTotal: Prom.Counter;
  private readonly forwardedTotal: Prom.Counter;
  private readonly rejectedTotal: Prom.Counter<'kind'>;
  private readonly duration: Prom.Histogram<'queue' | 'pattern' | 'outcome'>;
  private readonly criticalTime: Prom.Histogram<'queue' | 'pattern'>;
  private readonly inFlight: Prom.Gauge<'queue' | 'pattern'>;
  private readonly consumers: Prom.Gauge<'queue'>;
  private readonly connections: Prom.Gauge<'role'>;
  private readonly outboxSentTotal: Prom.Counter<'table'>;
  private readonly outboxParkedTotal: Prom.Counter<'table'>;
  private readonly outboxWaiting: Prom.Gauge<'table'>;
  private readonly outboxOldest: Prom.Gauge<'table'>;
  private readonly outboxParkedRows: Prom.Gauge<'table'>;
  private readonly outboxTableBytes: Prom.Gauge<'table'>;
  private readonly outboxLag: Prom.Histogram<'table'>;
  private readonly queueState: Prom.Gauge<'queue'>;
  private readonly queueStateChanges: Prom.Counter<'queue' | 'to'>;
  /** The queues whose state gauge has a value: set at their first consumer, then by each change of state. */
  private readonly stateKnown = new Set<string>();
  private readonly partitionDepth: Prom.Gauge<'queue' | 'partition'>;
  private readonly partitionOwned: Prom.Gauge<'queue' | 'partition'>;

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
    this.droppedTotal = counter(METRIC_NAMES.dropped, "Messages that expired or were pushed out of a handler queue and dropped (onExpired: 'drop')", [
      'queue',
      'reason',
    ]);
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
    this.criticalTime =
      (existing(METRIC_NAMES.criticalTime) as Prom.Histogram<'queue' | 'pattern'> | undefined) ??
      new prom.Histogram({
        name: METRIC_NAMES.criticalTime,
        help: "From a handled message's publish (its AMQP timestamp) to its handling, retries and delays included",
        labelNames: byQueue,
        buckets: options.criticalTimeBuckets ?? CRITICAL_TIME_BUCKETS,
        registers,
      });
    this.inFlight = gauge(METRIC_NAMES.inFlight, 'Handlers running now', byQueue);
    this.consumers = gauge(METRIC_NAMES.consumersUp, '1 while a consumer consumes the queue, else 0', ['queue']);
    this.connections = gauge(METRIC_NAMES.connectionUp, '1 while the connection (consume or publish) is up, else 0', ['role']);
    this.outboxSentTotal = counter(METRIC_NAMES.outboxSent, 'Outbox rows published and confirmed by the relay', ['table']);
    this.outboxParkedTotal = counter(METRIC_NAMES.outboxParked, 'Outbox rows parked: refused by the broker for good, or unroutable', ['table']);
    this.outboxWaiting = gauge(METRIC_NAMES.outboxWaiting, 'Outbox rows not sent yet', ['table']);
    this.outboxOldest = gauge(METRIC_NAMES.outboxOldest, 'Age of the oldest outbox row not sent yet (0 when none waits)', ['table']);
    this.outboxParkedRows = gauge(METRIC_NAMES.outboxParkedRows, 'Outbox rows parked, waiting for an operator', ['table']);
    this.outboxTableBytes = gauge(METRIC_NAMES.outboxTableBytes, 'Size of the outbox table on disk, indexes included', ['table']);
    this.outboxLag =
      (existing(METRIC_NAMES.outboxLag) as Prom.Histogram<'table'> | undefined) ??
      new prom.Histogram({
        name: METRIC_NAMES.outboxLag,
        help: "From an outbox row's insert to the broker's confirm of its publish",
        labelNames: ['table'],
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
        registers,
      });
    this.queueState = gauge(
      METRIC_NAMES.queueState,
      "A handler queue's state: 0 running, 1 half-open (trial deliveries), 2 open (circuit breaker), 3 paused (by an operator)",
      ['queue'],
    );
    this.queueStateChanges = counter(METRIC_NAMES.queueStateChanges, "Changes of a handler queue's state, by the state it went to", ['queue', 'to']);
    const byPartition = ['queue', 'partition'] as const;
    this.partitionDepth = gauge(METRIC_NAMES.partitionDepth, 'Messages ready in a partition queue (each heartbeat)', byPartition);
    this.partitionOwned = gauge(METRIC_NAMES.partitionOwned, '1 while this instance consumes the partition, else 0', byPartition);
  }

  deliveryStarted(e: DeliveryEvent): void {
    this.inFlight.inc({ queue: e.queue, pattern: e.pattern ?? '' });
  }

  handled(e: DeliveryHandledEvent): void {
    const labels = { queue: e.queue, pattern: e.pattern ?? '' };
    this.inFlight.dec(labels);
    this.handledTotal.inc(labels);
    this.duration.observe({ queue: labels.queue, pattern: labels.pattern, outcome: 'handled' }, e.durationMs / 1000);
    const sent = publishedAt(e.message.properties.timestamp);
    if (sent !== undefined) this.criticalTime.observe(labels, Math.max(0, Date.now() - sent) / 1000);
  }

  failed(e: DeliveryFailedEvent): void {
    const labels = { queue: e.queue, pattern: e.pattern ?? '' };
    this.inFlight.dec(labels);
    this.failedTotal.inc(labels);
    // Labels written out, not spread: see DeliveryObservation.handled.
    if (e.retryTier !== undefined) this.retriedTotal.inc({ queue: labels.queue, pattern: labels.pattern, tier: String(e.retryTier) });
    this.duration.observe(
      { queue: labels.queue, pattern: labels.pattern, outcome: e.retryTier === undefined ? 'parked' : 'retried' },
      e.durationMs / 1000,
    );
  }

  dropped(e: MessageDroppedEvent): void {
    this.droppedTotal.inc({ queue: e.queue, reason: e.reason });
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
    // A queue that never changed state has a series too (0, running), so that an alert on it sees the queue at all.
    if (!this.stateKnown.has(e.queue)) {
      this.stateKnown.add(e.queue);
      this.queueState.set({ queue: e.queue }, QUEUE_STATE_VALUE.running);
    }
  }

  consumerDown(e: ConsumerDownEvent): void {
    this.consumers.set({ queue: e.queue }, 0);
  }

  outboxSent(e: OutboxSentEvent): void {
    this.outboxSentTotal.inc({ table: e.table });
    this.outboxLag.observe({ table: e.table }, e.lagMs / 1000);
  }

  outboxParked(e: OutboxParkedEvent): void {
    this.outboxParkedTotal.inc({ table: e.table });
  }

  outboxBacklog(e: OutboxBacklogEvent): void {
    this.outboxWaiting.set({ table: e.table }, e.waiting);
    this.outboxOldest.set({ table: e.table }, e.oldestAgeMs / 1000);
    this.outboxParkedRows.set({ table: e.table }, e.parked);
    this.outboxTableBytes.set({ table: e.table }, e.tableBytes);
  }

  /** Labels stay bounded: `queue` is a handler queue of the application, `to` one of four states. */
  queueStateChanged(e: QueueStateEvent): void {
    this.stateKnown.add(e.queue);
    this.queueState.set({ queue: e.queue }, QUEUE_STATE_VALUE[e.to]);
    this.queueStateChanges.inc({ queue: e.queue, to: e.to });
  }

  partitionObserved(e: PartitionObservedEvent): void {
    const labels = { queue: e.queue, partition: String(e.partition) };
    this.partitionDepth.set(labels, e.depth);
    this.partitionOwned.set(labels, e.owned ? 1 : 0);
  }
}
