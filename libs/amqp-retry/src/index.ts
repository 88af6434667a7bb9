export { RetryModule } from './nest/retry.module.js';
export { RetryWithBackoff } from './nest/retry-with-backoff.decorator.js';
export { RetryPublisher, type PublishOptions } from './nest/retry.publisher.js';
export { RETRY_MODULE_OPTIONS } from './nest/retry-module.definition.js';
export type {
  RetryModuleOptions,
  RetryHandlerOptions,
  ErrorClass,
  QueueType,
  IdempotencyOptions,
  OrderingOptions,
  FailureLogs,
} from './core/retry-options.js';
export type { IdempotencyStore, ClaimResult } from './core/idempotency-store.js';
export type { MessageKeyFn } from './core/message-key.js';
export { RedisIdempotencyStore, type RedisIdempotencyStoreOptions, type RedisLikeClient } from './idempotency/redis.idempotency-store.js';
export { PostgresIdempotencyStore, type PostgresIdempotencyStoreOptions, type PgLikePool } from './idempotency/postgres.idempotency-store.js';
export { IdempotencyStoreError } from './errors/idempotency-store.error.js';
export type { RetryContext } from './core/retry-context.js';
export type { XDeath } from './core/x-death.parser.js';
export type { Duration } from './core/duration.js';
export type { ParkReason } from './core/delivery.decision.js';
export type { Deserializer } from './core/body.decoder.js';
export { NonRetryableError } from './errors/non-retryable.error.js';
export { RetryConfigError } from './errors/retry-config.error.js';
export { TopologyMismatchError } from './errors/topology-mismatch.error.js';
export { PublishError } from './errors/publish.error.js';
export { NotConnectedError } from './errors/not-connected.error.js';
export { ParkedScopeError } from './errors/parked-scope.error.js';
export { delayLadderPrefix, planDelayTopology, MAX_DELAY_MS, type DelayTopology } from './core/delay.plan.js';
export { RetryEngine } from './engine/retry.engine.js';
export type {
  RetryObserver,
  DeliveryScope,
  PublishScope,
  DeliveryEvent,
  DeliveryHandledEvent,
  DeliveryFailedEvent,
  MessageParkedEvent,
  PublishKind,
  PublishingEvent,
  PublishedEvent,
  PublishRejectedEvent,
  ConnectionEvent,
  ConsumerEvent,
  ConsumerDownEvent,
} from './observability/retry-observer.js';
export type { MetricsOptions, MetricsRegistry } from './observability/metrics.options.js';
export { createPrometheusObserver } from './observability/metrics.factory.js';
export type { TracingOptions } from './observability/tracing.options.js';
export { createTracingObserver } from './observability/tracing.factory.js';
export type { EngineHealth } from './engine/retry.engine.js';
export type { QueueStatus } from './engine/handler-runtime.js';
export { ParkedMessages } from './ops/parked-messages.js';
export type {
  ParkedFilter,
  ParkedMessageView,
  HandlerQueueState,
  ParkedSummary,
  PageRequest,
  ParkedPage,
  ParkedSelection,
  OperationOptions,
  ReplayResult,
  PurgeResult,
  EditReplayOptions,
  ParkedMessagesOptions,
} from './ops/parked-messages.types.js';
export { RetryDashboardModule, type RetryDashboardAsyncOptions } from './ops/dashboard/retry-dashboard.module.js';
export type { RetryDashboardOptions } from './ops/dashboard/dashboard-options.js';
