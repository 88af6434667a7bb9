import type { Deserializer } from '../message/body.decoder.js';
import type { Duration } from '../time/duration.reader.js';
import type { MetricsOptions } from '../observe/metrics.options.js';
import type { RetryObserver } from '../observe/retry.observer.js';
import type { TracingOptions } from '../observe/tracing.options.js';
import type { IdempotencyStore } from '../idempotency/idempotency.store.js';
import type { MessageKeyFn } from '../message/message-key.reader.js';
import type { HandlerInboxOptions, InboxOptions, OutboxOptions } from '../outbox/outbox.options.js';
import type { QueueType } from '../topology/topology.types.js';
import type { QueueLimitsOptions } from './queue-limits.config.js';
import type { ErrorClass } from '../delivery/delivery.decision.js';
import type { CircuitBreakerOptions, RateLimitOptions } from '../breaker/breaker.options.js';

// Declared beside what reads them (a leaf each, so that no import runs in a circle) and part of the options.
export type { QueueType, ErrorClass };

/** Options of `RetryModule.forRoot()`. Each is taken from here if given, else from the environment, else the default. */
export interface RetryModuleOptions {
  /** Broker URL. Env `AMQP_URL`; default `amqp://guest:guest@localhost:5672`. For a cluster, give `urls` instead. */
  url?: string;
  /**
   * The nodes of a cluster, instead of `url`: the first that answers is used; a lost connection tries the next node,
   * then the others round-robin (the lost one last). Env `AMQP_URL` as a comma-separated list.
   */
  urls?: string[];
  /** One retry tier per entry, in order; the last repeats. Env `RETRY_DELAYS` ("1s,10s,1m"); default `['1s', '10s', '1m']`. */
  delays?: Duration[];
  /** Handler calls in all, the first included. Env `RETRY_MAX_ATTEMPTS`; default: the number of tiers + 1. */
  maxAttempts?: number;
  /** Unacknowledged deliveries per consumer. Env `RETRY_PREFETCH`; default 20. */
  prefetch?: number;
  /**
   * The type of the handlers' queues: 'quorum' dead-letters at least once, and parks a message that keeps crashing the
   * process. Env `RETRY_QUEUE_TYPE`; default 'classic'.
   */
  queueType?: QueueType;
  /** The connection's name in the management UI and `rabbitmqctl list_connections`; default `nestjs-amqp-retry (pid <pid>)`. */
  connectionName?: string;
  /**
   * The application's name (printable, at most 200 characters), recorded with its handler queues, so that
   * `amqp-retry parked --app <name>` finds them. Env `RETRY_APPLICATION`; default none.
   */
  application?: string;
  /** Spacing of reconnection attempts after a connection loss: capped exponential backoff with 20% jitter. */
  reconnect?: {
    /** The wait before the first attempt. Default '100ms'. */
    initialDelay?: Duration;
    /** The longest wait between attempts. Default '30s'. */
    maxDelay?: Duration;
  };
  /** How long a publish may wait for the connection, a channel or a full socket buffer. Env `RETRY_PUBLISH_TIMEOUT`; default '10s'. */
  publishTimeout?: Duration;
  /** How many publishes may wait for the connection at once; more reject at once. Default 1000. */
  publishBufferSize?: number;
  /**
   * Delayed delivery (`RetryPublisher.publish(..., { delay })`) through a ladder of TTL queues. Default true, with the
   * prefix 'amqp-retry.delay' shared by the vhost's applications; `false` turns it off, `{ prefix }` uses a ladder of
   * its own. `queueType: 'quorum'` makes a delayed message survive the loss of a node (names start `<prefix>.quorum.`).
   */
  delayedDelivery?:
    | boolean
    | {
        /** The ladder's name prefix. Default 'amqp-retry.delay'. */
        prefix?: string;
        /** The type of the ladder's queues. Default: the module's `queueType`. */
        queueType?: QueueType;
      };
  /** How long `app.close()` lets handlers in flight finish. Env `RETRY_SHUTDOWN_TIMEOUT`; default '30s'. */
  shutdownTimeout?: Duration;
  /**
   * How long one handler call may take, for handlers without their own `timeout`: past it the call's `signal` aborts
   * and the attempt counts as failed. Keep it below the broker's consumer timeout. Env `RETRY_HANDLER_TIMEOUT`;
   * default none (0: no limit).
   */
  handlerTimeout?: Duration;
  /** The same as `handlerTimeout`, named as the handler option (`@RetryWithBackoff({ timeout })`); give one of the two. */
  timeout?: Duration;
  /**
   * How long a publish waits for the broker's confirm (a broker blocking publishers over an alarm never confirms).
   * Env `RETRY_CONFIRM_TIMEOUT`; default '10s'.
   */
  confirmTimeout?: Duration;
  /** How long one attempt to connect may take (TCP and AMQP handshake). Env `RETRY_CONNECT_TIMEOUT`; default '10s'. */
  connectTimeout?: Duration;
  /**
   * How a body becomes the payload, for handlers without their own: 'json' (default: strict UTF-8 JSON), 'raw' (the
   * Buffer), or `(content, message) => payload`. What cannot be read is parked as malformed.
   */
  deserializer?: Deserializer;
  /** Told of deliveries, publishes, connection and consumer changes (see RetryObserver): for alerts and audit. */
  observers?: RetryObserver[];
  /** Prometheus metrics (prom-client, loaded only when on): `true` in its default registry, `{ registry }` in yours. Default off. */
  metrics?: boolean | MetricsOptions;
  /**
   * OpenTelemetry tracing (@opentelemetry/api, loaded only when on): trace context in every publish's headers, a span per
   * attempt. Your application registers the SDK. Default off.
   */
  tracing?: boolean | TracingOptions;
  /** How handler failures and parks are logged. */
  logging?: {
    /**
     * `'line'` (default): a warning for each retry, and Nest's ExceptionsHandler stays quiet (your exception filters
     * still see every error); `'nest'`: Nest's ExceptionsHandler logs each failure with its stack, retry lines are debug.
     */
    retries?: RetryLogs;
    /** `'line'` (default): one warning line, the stack kept in the parked copy (`x-exception-stack`); `'stack'`: then the stack. */
    parked?: ParkLogs;
  };
  /** Handle each message once, for every handler without its own `idempotency` (see IdempotencyOptions). */
  idempotency?: IdempotencyOptions;
  /** The transactional outbox (see OutboxOptions). */
  outbox?: OutboxOptions;
  /** The transactional inbox for every handler without its own `inbox` (see InboxOptions). */
  inbox?: InboxOptions;
  /** A circuit breaker on every handler queue without its own: `true` for the defaults, or options. Default off. */
  circuitBreaker?: boolean | CircuitBreakerOptions;
  /** At most `calls` handler calls per `per`, for every handler without its own `rateLimit` (each its own bucket). */
  rateLimit?: RateLimitOptions;
  /**
   * Beat to the retry console (docs/console.md): this instance's queues, states, counts and timings on the control
   * exchange, so that the page served by another instance shows it. For instances without `RetryDashboardModule`
   * (which beats anyway, at its `heartbeatIntervalMs`). Default false.
   * @example heartbeat: true
   */
  heartbeat?:
    | boolean
    | {
        /** Milliseconds between two beats, 250 to 60000; default 5000. An instance shows as gone after 3 missed beats. */
        intervalMs?: number;
      };
}

/**
 * Handle each message once: a copy whose key is recorded as handled is acked without calling the handler, and two
 * copies in flight at once never both run (docs/idempotency-and-ordering.md, "Handling each message once").
 * @example { store: new RedisIdempotencyStore({ url: 'redis://127.0.0.1:6379' }), ttl: '7d' }
 */
export interface IdempotencyOptions {
  /** Where handled keys are recorded: RedisIdempotencyStore, PostgresIdempotencyStore or your own. */
  store: IdempotencyStore;
  /** Names a message: default its AMQP message id; a message without a key is parked as malformed. */
  key?: MessageKeyFn;
  /** How long a key stays recorded as handled: a copy arriving later runs again. Default '1d'. */
  ttl?: Duration;
  /** How long a claim lasts without renewal (renewed every third of it): a crashed handler's copies wait this long. Default '30s'. */
  claimTtl?: Duration;
}

/**
 * Handle messages with the same key one at a time, in arrival order, within each consumer (docs/idempotency-and-ordering.md, "Ordering").
 * @example { key: (order) => (order as { customerId: string }).customerId, whileRetrying: 'hold' }
 */
export interface OrderingOptions {
  /** The sequence a message belongs to: a function of the payload and delivery, or a header. undefined: no sequence. */
  key:
    | MessageKeyFn
    | {
        /** The header whose value is the key. */
        header: string;
      };
  /**
   * While a message waits in a retry tier: 'continue' (default) lets its key's later messages run, so the retried one
   * ends up after them; 'hold' keeps them waiting (at most its tier delay plus `holdGrace`, and prefetch - 1 messages).
   */
  whileRetrying?: 'continue' | 'hold';
  /** How long past its tier delay a held key waits for its retry to come back before it lets the others run. Default '10s'. */
  holdGrace?: Duration;
}

/** What the broker hashes to route a message to its partition, whoever published it: a header, or the AMQP message id. */
export type PartitionKey =
  | {
      /** The header whose value the broker hashes. */
      header: string;
    }
  | 'messageId';

/**
 * Split the handler's queue into `count` partition queues by a stable hash of `key` (docs/partitions.md): each key's
 * messages run in order on one instance at a time, and the partitions spread over the running instances.
 * @example { count: 8, key: { header: 'x-account-id' }, whileRetrying: 'hold' }
 */
export interface PartitionsOptions {
  /** How many partition queues (`<queue>.p0` ... `<queue>.p<count-1>`): 1 to 256. Aim for several per instance. */
  count: number;
  /** What the broker hashes: `{ header: 'x-account-id' }`, or `'messageId'`. Messages of a key run in order. */
  key: PartitionKey;
  /** As OrderingOptions.whileRetrying: 'continue' (default) or 'hold'. */
  whileRetrying?: 'continue' | 'hold';
  /** With 'hold': how long past its tier delay a key waits for its retry. Default '10s'. */
  holdGrace?: Duration;
  /** How often each instance announces itself; after 3 missed, its partitions move. Default '1s' (from '100ms' to '1m'). */
  heartbeat?: Duration;
}

/** How handler failures are logged: RetryModuleOptions.logging.retries, the engine's `retryLogs`. */
export type RetryLogs = 'line' | 'nest';

/** How parks are logged: RetryModuleOptions.logging.parked, the engine's `parkLogs`. */
export type ParkLogs = 'line' | 'stack';

/** @deprecated The same type under its old name: use RetryLogs. */
export type FailureLogs = RetryLogs;

/**
 * Options of `@RetryWithBackoff()`. The queue's own limits (`maxLength`, `maxLengthBytes`, `overflow`, `messageTtl`,
 * `maxPriority`) and `onExpired` are QueueLimitsOptions'.
 */
export interface RetryHandlerOptions extends QueueLimitsOptions {
  /** The business queue the handler consumes (required). */
  queue: string;
  /** Exchange to bind the queue to; declared (durable) if given. Without it, publish to the queue by name. */
  exchange?: string;
  /** Type of `exchange`; default 'topic'. */
  exchangeType?: 'topic' | 'direct' | 'fanout' | 'headers';
  /** Binding key(s) from `exchange`; default '#'. */
  routingKey?: string | string[];
  /** One TTL tier per entry; overrides the module default. Give this or `backoff`, not both. */
  delays?: Duration[];
  /** Exponential tiers: initial * multiplier^k, capped at max. Give this or `delays`, not both. */
  backoff?: {
    /** The first tier's delay. */
    initial: Duration;
    /** Each tier's delay is the one before's times this. Default 2. */
    multiplier?: number;
    /** No tier's delay is longer. Default: the longest delay a tier can have. */
    max?: Duration;
    /** How many tiers. Default: `maxAttempts` - 1, else 3. */
    tiers?: number;
  };
  /** Handler calls in all, the first included. Default: the module's, else the number of tiers + 1. */
  maxAttempts?: number;
  /**
   * How long one call may take: past it the call's `signal` aborts (reason: a HandlerTimeoutError) and the attempt
   * fails like any other. Default: the module's `handlerTimeout`; 0 turns it off for this handler.
   */
  timeout?: Duration;
  /** Where exhausted, non-retryable and malformed messages are parked; default `${queue}.error`. */
  errorQueue?: string;
  /** Errors that park at once: classes (matched with instanceof) or a predicate. NonRetryableError always parks. */
  nonRetryable?: ErrorClass[] | ((error: unknown) => boolean);
  /** Unacknowledged deliveries for this handler's consumer; default the module's. */
  prefetch?: number;
  /** The type of this handler's queues; default the module's. */
  queueType?: QueueType;
  /** How the body becomes the payload: 'json', 'raw' or a function; default the module's ('json'). */
  deserializer?: Deserializer;
  /** Handle each message once; default the module's. `false` turns the module's default off for this handler. */
  idempotency?: IdempotencyOptions | false;
  /**
   * Run the handler in a transaction (`context.transaction`) that records the message as handled (see InboxOptions).
   * Default the module's; `false` turns it off. Not with `idempotency`.
   */
  inbox?: HandlerInboxOptions | false;
  /** Handle messages with the same key one at a time, in arrival order (within this consumer). */
  ordering?: OrderingOptions;
  /**
   * Declares the queue with `x-single-active-consumer`, so ordering holds across instances. Changing it for an existing
   * queue fails the start (TopologyMismatchError). Default false.
   */
  singleActiveConsumer?: boolean;
  /** Stops consuming while the handler keeps failing: `true`, options, or `false` to turn the module's default off. */
  circuitBreaker?: boolean | CircuitBreakerOptions;
  /** At most `calls` handler calls per `per` in this process; `false` turns the module's default off. */
  rateLimit?: RateLimitOptions | false;
  /**
   * Splits the queue into partition queues (plugin `rabbitmq_consistent_hash_exchange`; see PartitionsOptions). Not
   * with `ordering` or `singleActiveConsumer`, which it implies.
   */
  partitions?: PartitionsOptions;
}
