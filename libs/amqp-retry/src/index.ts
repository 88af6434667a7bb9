/**
 * The `nestjs-amqp-retry` entry: the Nest module and decorator, the publishers, the engine without Nest, the
 * idempotency stores, the outbox and inbox adapters, parked messages and their page, observers, errors and types.
 * The microservices transport and the terminus health indicator have entries of their own
 * (`nestjs-amqp-retry/transport`, `nestjs-amqp-retry/health`).
 *
 * @packageDocumentation
 * @module nestjs-amqp-retry
 */
export { RetryModule } from './nest/retry.module.js';
export { RetryWithBackoff } from './nest/retry-with-backoff.decorator.js';
export { RetryPublisher, type PublishOptions, type PublishedMessage } from './nest/retry.publisher.js';
export { RETRY_MODULE_OPTIONS } from './nest/retry-module.definition.js';
export type {
  RetryModuleOptions,
  RetryHandlerOptions,
  ErrorClass,
  QueueType,
  IdempotencyOptions,
  OrderingOptions,
  RetryLogs,
  ParkLogs,
  FailureLogs,
  PartitionKey,
  PartitionsOptions,
} from './core/config/retry.options.js';
export type { QueueLimitsOptions, QueueOverflow, DeadLetterAction } from './core/config/queue-limits.config.js';
export type { IdempotencyStore, ClaimResult } from './core/idempotency/idempotency.store.js';
export type { CircuitBreakerOptions, RateLimitOptions } from './core/breaker/breaker.options.js';
export type { QueueState } from './core/breaker/queue.state.js';
export type { CircuitState } from './core/breaker/circuit.state.js';
export type { QueueFlowStatus } from './engine/queue-flow.control.js';
export type { MessageKeyFn } from './core/message/message-key.reader.js';
export { RedisIdempotencyStore, type RedisIdempotencyStoreOptions, type RedisLikeClient } from './stores/redis.idempotency-store.js';
export { PostgresIdempotencyStore, type PostgresIdempotencyStoreOptions, type PgLikePool } from './stores/postgres.idempotency-store.js';
export { IdempotencyStoreError } from './errors/idempotency-store.error.js';
export type { RetryContext, RetryContextBase } from './core/delivery/retry.context.js';
export { OutboxPublisher } from './nest/outbox.publisher.js';
export type { OutboxReceipt } from './engine/outbox.side.js';
export type { OutboxOptions, InboxOptions, HandlerInboxOptions } from './core/outbox/outbox.options.js';
export type { OutboxAdapter, OutboxTransaction, SqlResult } from './core/outbox/outbox.adapter.js';
export type { OutboxMessage, OutboxMessageProperties } from './core/outbox/outbox.message.js';
export { outboxMigration } from './core/outbox/outbox.migration.js';
export { pgOutboxAdapter, type PgPoolLike, type PgClientLike } from './stores/pg.outbox-adapter.js';
export {
  typeormOutboxAdapter,
  type TypeormDataSourceLike,
  type TypeormEntityManagerLike,
  type TypeormQueryRunnerLike,
  type TypeormTransaction,
} from './stores/typeorm.outbox-adapter.js';
export type { XDeath } from './core/delivery/x-death.parser.js';
export type { Duration } from './core/time/duration.reader.js';
export type { RetryLogger } from './core/observe/retry.logger.js';
export type { ParkReason } from './core/delivery/delivery.decision.js';
export type { Deserializer } from './core/message/body.decoder.js';
export { NonRetryableError } from './errors/non-retryable.error.js';
export { HandlerTimeoutError } from './errors/handler-timeout.error.js';
export { RetryConfigError } from './errors/retry-config.error.js';
export { TopologyMismatchError, type HashKeyMismatch } from './errors/topology-mismatch.error.js';
export { PartitionsPluginError } from './errors/partitions-plugin.error.js';
export { PublishError } from './errors/publish.error.js';
export { NotConnectedError } from './errors/not-connected.error.js';
export { ParkedScopeError } from './errors/parked-scope.error.js';
export { NotAParkingQueueError } from './errors/not-a-parking-queue.error.js';
export { ParkedCountChangedError } from './errors/parked-count-changed.error.js';
export { partitionNames } from './core/partitions/partition.plan.js';
export { delayLadderPrefix, planDelayTopology, MAX_DELAY_MS, type DelayTopology } from './core/delivery/delay.plan.js';
export { retryTopologyNames, type RetryTopologyNames, type RetryTopologyNamesOptions } from './core/topology/retry-topology.names.js';
export { RetryEngine } from './engine/retry.engine.js';
export type {
  RetryObserver,
  DeliveryScope,
  PublishScope,
  DeliveryEvent,
  DeliveryHandledEvent,
  DeliveryFailedEvent,
  MessageParkedEvent,
  MessageDroppedEvent,
  PublishKind,
  PublishingEvent,
  PublishedEvent,
  PublishRejectedEvent,
  ConnectionEvent,
  ConsumerEvent,
  ConsumerDownEvent,
  OutboxSentEvent,
  OutboxParkedEvent,
  OutboxBacklogEvent,
  QueueStateEvent,
  PartitionObservedEvent,
} from './core/observe/retry.observer.js';
export type { MetricsOptions, MetricsRegistry } from './core/observe/metrics.options.js';
export { createPrometheusObserver } from './observability/metrics.factory.js';
export type { TracingOptions } from './core/observe/tracing.options.js';
export { createTracingObserver } from './observability/tracing.factory.js';
export type { EngineHealth, QueueActivity } from './engine/engine.views.js';
export type { ActivityCounts } from './core/observe/activity.counter.js';
export type { OutboxRelayHealth } from './engine/outbox.relay.js';
export type { QueueStatus } from './engine/handler.runtime.js';
export type { PartitionsStatus, PartitionStatus } from './core/partitions/partitions.status.js';
export { ParkedMessages } from './ops/parked-messages.service.js';
export { QueueControl, type ControlOutcome, type ControlReply } from './ops/queue-control.client.js';
export type {
  ParkedFilter,
  ParkedMessageView,
  HandlerQueueState,
  ParkedSummary,
  FailureGroup,
  PageRequest,
  ParkedPage,
  ParkedSelection,
  OperationOptions,
  ReplayResult,
  PurgeResult,
  EditReplayOptions,
  ParkedMessagesOptions,
} from './core/parking/parked-messages.types.js';
export { RetryDashboardModule, type RetryDashboardAsyncOptions } from './ops/dashboard/retry-dashboard.module.js';
export type { RetryDashboardOptions } from './ops/dashboard/dashboard.options.js';
