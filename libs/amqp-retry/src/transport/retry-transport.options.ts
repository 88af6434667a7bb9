import type { Duration } from '../core/time/duration.reader.js';
import type { PartitionsOptions, RetryHandlerOptions, RetryModuleOptions } from '../core/config/retry.options.js';
import type { RetryEngine } from '../engine/retry.engine.js';
import type { PublishOptions } from '../core/publish/publish.options.js';

/**
 * Options of `new RetryServer()`: where to listen (a queue, optionally bound to an exchange), the queue's default
 * retry policy, and the connection options of `RetryModule.forRoot()`, or `engine` to share a RetryModule's
 * connections in a hybrid application (`app.get(RetryEngine)`).
 */
export interface RetryServerOptions
  extends RetryModuleOptions, Pick<RetryHandlerOptions, 'exchange' | 'exchangeType' | 'errorQueue' | 'nonRetryable' | 'backoff'> {
  /** The queue to consume (required). Nest's ClientRMQ sends to it by name. */
  queue: string;
  /**
   * Binding keys from `exchange`; default: the patterns of the handlers (strings as they are, objects as JSON), so
   * the queue receives what this service handles and no more.
   */
  routingKey?: string | string[];
  /**
   * How long a `@MessagePattern` handler may take (its stream to complete) before the caller gets an error and the
   * request is acked: a handler that never answers would otherwise hold its delivery and a prefetch slot for good.
   * Default '30s'.
   */
  requestTimeout?: Duration;
  /** A RetryModule's engine (`app.get(RetryEngine)`): one connection pair for the module's handlers and the transport's. */
  engine?: RetryEngine;
  /**
   * Splits the queue into `count` partition queues `<queue>.p<i>` by a stable hash of `key` (docs/partitions.md): each
   * key's messages run in order, each partition on one instance at a time, spread over the running servers; every
   * partition runs the server's patterns with their policies, tiers of its own and its parking queue
   * `<queue>.p<i>.error`. Requires `exchange` (publish there: `RetryClient({ exchange })`, Nest's
   * `ClientRMQ({ exchange, wildcards: true })`, or amqplib), since a send to the queue by name cannot be hashed; not with `circuitBreaker` or
   * `rateLimit`. `@MessagePattern` requests are answered as they arrive, beside their key's events, not in their
   * order (docs/transport.md#partitions).
   * @example new RetryServer({ queue: 'accounts', exchange: 'bank', partitions: { count: 8, key: { header: 'x-account-id' }, whileRetrying: 'hold' } })
   */
  partitions?: PartitionsOptions;
}

/**
 * A pattern's own retry policy: `@EventPattern('order.created', { retry: { delays: ['200ms', '1s'], maxAttempts: 3 } })`.
 * The queue, exchange and prefetch are the server's.
 */
// An interface, not a type alias: the public type keeps its kind; its keys are the handler's, so the two cannot drift.
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface EventRetryOptions extends Pick<RetryHandlerOptions, 'delays' | 'backoff' | 'maxAttempts' | 'nonRetryable' | 'timeout'> {}

/**
 * Options of `RetryClient` (ClientsModule `customClass`): where to send, and the connection options of RetryModule,
 * or `engine` to publish on a RetryModule's connections in an application that has one.
 */
export interface RetryClientOptions extends RetryModuleOptions {
  /** Publish events and requests to this exchange with the pattern as routing key. */
  exchange?: string;
  /** Without `exchange`: send to this queue by name, as Nest's ClientRMQ does. */
  queue?: string;
  /** Default true: messages survive a broker restart. */
  persistent?: boolean;
  /**
   * A RetryModule's engine (`RetryEngine`, injected through `ClientsModule.registerAsync`): the client publishes on the
   * module's connections and delays through the module's ladder, whose forwarder the module runs; it opens no
   * connection of its own, its connection options are not used, and closing it leaves the engine to the module.
   */
  engine?: RetryEngine;
}

/** The third argument of `RetryClient.emit`. */
export interface RetryEmitOptions extends Pick<
  PublishOptions,
  'persistent' | 'expiration' | 'priority' | 'correlationId' | 'replyTo' | 'type' | 'appId' | 'timestamp'
> {
  /** Deliver after this long (through the delay ladder): ms or a duration ('30m'). */
  delay?: Duration;
  /** Headers of the message, besides those the library sets. */
  headers?: Record<string, unknown>;
  /** Default: a random UUID. */
  messageId?: string;
}
