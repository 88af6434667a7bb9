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

/** Critical time's buckets, in seconds: from a message handled at once to one retried for hours. */
const CRITICAL_TIME_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600];

type Prometheus = typeof Prom;

/**
 * The metrics, Prometheus style (docs/design.md maps them to the OpenTelemetry messaging metrics), registered in this
 * order; one of the same name already in the registry is shared (see PrometheusObserver).
 */
function createMetrics(prom: Prometheus, options: MetricsOptions) {
  const registers = [(options.registry ?? prom.register) as Prom.Registry];
  const existing = (name: string) => registers[0].getSingleMetric(name);
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    (existing(name) as Prom.Counter<L> | undefined) ?? new prom.Counter<L>({ name, help, labelNames, registers });
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    (existing(name) as Prom.Gauge<L> | undefined) ?? new prom.Gauge<L>({ name, help, labelNames, registers });
  const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[], buckets?: number[]) =>
    (existing(name) as Prom.Histogram<L> | undefined) ?? new prom.Histogram<L>({ name, help, labelNames, ...(buckets && { buckets }), registers });
  const byQueue = ['queue', 'pattern'] as const;
  const byTier = [...byQueue, 'tier'] as const;
  const byPartition = ['queue', 'partition'] as const;
  return {
    handledTotal: counter('amqp_retry_deliveries_handled_total', 'Deliveries whose handler returned (acked)', byQueue),
    failedTotal: counter('amqp_retry_deliveries_failed_total', 'Handler calls that threw (retried or parked)', byQueue),
    retriedTotal: counter('amqp_retry_deliveries_retried_total', 'Failed deliveries sent to a retry tier (1 = the first delay)', byTier),
    parkedTotal: counter('amqp_retry_messages_parked_total', 'Messages parked in an error queue, by reason', [...byQueue, 'reason']),
    droppedTotal: counter(
      'amqp_retry_messages_dropped_total',
      "Messages that expired or were pushed out of a handler queue and dropped (onExpired: 'drop')",
      ['queue', 'reason'],
    ),
    delayedTotal: counter('amqp_retry_delayed_published_total', 'Delayed messages that entered the delay ladder', []),
    forwardedTotal: counter('amqp_retry_delayed_forwarded_total', 'Due delayed messages forwarded to their target', []),
    rejectedTotal: counter('amqp_retry_publishes_rejected_total', 'Publishes the broker refused, returned or never confirmed', ['kind']),
    duration: histogram(
      'amqp_retry_handler_duration_seconds',
      'How long handlers ran, by outcome (handled, retried, parked; failed: a request answered with its error)',
      [...byQueue, 'outcome'],
      options.durationBuckets,
    ),
    criticalTime: histogram(
      'amqp_retry_critical_time_seconds',
      "From a handled message's publish (its AMQP timestamp) to its handling, retries and delays included",
      byQueue,
      options.criticalTimeBuckets ?? CRITICAL_TIME_BUCKETS,
    ),
    inFlight: gauge('amqp_retry_handlers_in_flight', 'Handlers running now', byQueue),
    consumers: gauge('amqp_retry_consumers_up', '1 while a consumer consumes the queue, else 0', ['queue']),
    connections: gauge('amqp_retry_connection_up', '1 while the connection (consume or publish) is up, else 0', ['role']),
    outboxSentTotal: counter('amqp_retry_outbox_sent_total', 'Outbox rows published and confirmed by the relay', ['table']),
    outboxParkedTotal: counter('amqp_retry_outbox_parked_total', 'Outbox rows parked: refused by the broker for good, or unroutable', ['table']),
    outboxWaiting: gauge('amqp_retry_outbox_rows_waiting', 'Outbox rows not sent yet', ['table']),
    outboxOldest: gauge('amqp_retry_outbox_oldest_age_seconds', 'Age of the oldest outbox row not sent yet (0 when none waits)', ['table']),
    outboxParkedRows: gauge('amqp_retry_outbox_rows_parked', 'Outbox rows parked, waiting for an operator', ['table']),
    outboxTableBytes: gauge('amqp_retry_outbox_table_bytes', 'Size of the outbox table on disk, indexes included', ['table']),
    outboxLag: histogram(
      'amqp_retry_outbox_relay_lag_seconds',
      "From an outbox row's insert to the broker's confirm of its publish",
      ['table'],
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    ),
    queueState: gauge(
      'amqp_retry_queue_state',
      "A handler queue's state: 0 running, 1 half-open (trial deliveries), 2 open (circuit breaker), 3 paused (by an operator)",
      ['queue'],
    ),
    queueStateChanges: counter('amqp_retry_queue_state_changes_total', "Changes of a handler queue's state, by the state it went to", [
      'queue',
      'to',
    ]),
    partitionDepth: gauge('amqp_retry_partition_depth', 'Messages ready in a partition queue (each heartbeat)', byPartition),
    partitionOwned: gauge('amqp_retry_partition_owned', '1 while this instance consumes the partition, else 0', byPartition),
  };
}

/**
 * Counts what the engine reports into prom-client metrics. A metric of the same name already in the registry (a
 * second application in the process, a test) is shared rather than registered twice, which prom-client refuses.
 */
export class PrometheusObserver implements RetryObserver {
  private readonly metrics: ReturnType<typeof createMetrics>;
  /** The queues whose state gauge has a value: set at their first consumer, then by each change of state. */
  private readonly stateKnown = new Set<string>();

  constructor(prom: Prometheus, options: MetricsOptions = {}) {
    this.metrics = createMetrics(prom, options);
  }

  deliveryStarted(e: DeliveryEvent): void {
    this.metrics.inFlight.inc({ queue: e.queue, pattern: e.pattern ?? '' });
  }

  handled(e: DeliveryHandledEvent): void {
    const labels = { queue: e.queue, pattern: e.pattern ?? '' };
    this.metrics.inFlight.dec(labels);
    this.metrics.handledTotal.inc(labels);
    this.metrics.duration.observe({ queue: labels.queue, pattern: labels.pattern, outcome: 'handled' }, e.durationMs / 1000);
    const sent = publishedAt(e.message.properties.timestamp);
    if (sent !== undefined) this.metrics.criticalTime.observe(labels, Math.max(0, Date.now() - sent) / 1000);
  }

  failed(e: DeliveryFailedEvent): void {
    const labels = { queue: e.queue, pattern: e.pattern ?? '' };
    this.metrics.inFlight.dec(labels);
    this.metrics.failedTotal.inc(labels);
    // Labels written out, not spread: see DeliveryObservation.handled.
    if (e.retryTier !== undefined) this.metrics.retriedTotal.inc({ queue: labels.queue, pattern: labels.pattern, tier: String(e.retryTier) });
    this.metrics.duration.observe(
      { queue: labels.queue, pattern: labels.pattern, outcome: e.request ? 'failed' : e.retryTier === undefined ? 'parked' : 'retried' },
      e.durationMs / 1000,
    );
  }

  dropped(e: MessageDroppedEvent): void {
    this.metrics.droppedTotal.inc({ queue: e.queue, reason: e.reason });
  }

  parked(e: MessageParkedEvent): void {
    this.metrics.parkedTotal.inc({ queue: e.queue, pattern: e.pattern ?? '', reason: e.reason });
  }

  delayedPublished(): void {
    this.metrics.delayedTotal.inc();
  }

  forwarded(): void {
    this.metrics.forwardedTotal.inc();
  }

  publishRejected(e: PublishRejectedEvent): void {
    this.metrics.rejectedTotal.inc({ kind: e.kind });
  }

  connectionUp(e: ConnectionEvent): void {
    this.metrics.connections.set({ role: e.role }, 1);
  }

  connectionLost(e: ConnectionEvent): void {
    this.metrics.connections.set({ role: e.role }, 0);
  }

  connectionClosed(e: ConnectionEvent): void {
    this.metrics.connections.set({ role: e.role }, 0);
  }

  consumerUp(e: ConsumerEvent): void {
    this.metrics.consumers.set({ queue: e.queue }, 1);
    // A queue that never changed state has a series too (0, running), so that an alert on it sees the queue at all.
    if (!this.stateKnown.has(e.queue)) {
      this.stateKnown.add(e.queue);
      this.metrics.queueState.set({ queue: e.queue }, QUEUE_STATE_VALUE.running);
    }
  }

  consumerDown(e: ConsumerDownEvent): void {
    this.metrics.consumers.set({ queue: e.queue }, 0);
  }

  outboxSent(e: OutboxSentEvent): void {
    this.metrics.outboxSentTotal.inc({ table: e.table });
    this.metrics.outboxLag.observe({ table: e.table }, e.lagMs / 1000);
  }

  outboxParked(e: OutboxParkedEvent): void {
    this.metrics.outboxParkedTotal.inc({ table: e.table });
  }

  outboxBacklog(e: OutboxBacklogEvent): void {
    this.metrics.outboxWaiting.set({ table: e.table }, e.waiting);
    this.metrics.outboxOldest.set({ table: e.table }, e.oldestAgeMs / 1000);
    this.metrics.outboxParkedRows.set({ table: e.table }, e.parked);
    this.metrics.outboxTableBytes.set({ table: e.table }, e.tableBytes);
  }

  /** Labels stay bounded: `queue` is a handler queue of the application, `to` one of four states. */
  queueStateChanged(e: QueueStateEvent): void {
    this.stateKnown.add(e.queue);
    this.metrics.queueState.set({ queue: e.queue }, QUEUE_STATE_VALUE[e.to]);
    this.metrics.queueStateChanges.inc({ queue: e.queue, to: e.to });
  }

  partitionObserved(e: PartitionObservedEvent): void {
    const labels = { queue: e.queue, partition: String(e.partition) };
    this.metrics.partitionDepth.set(labels, e.depth);
    this.metrics.partitionOwned.set(labels, e.owned ? 1 : 0);
  }
}
