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
   * The nodes of a cluster, instead of `url`. At start-up the first that answers is used; when the connection is lost,
   * reconnection tries the next node after the lost one, then the others round-robin (the lost node last), with the
   * usual `reconnect` backoff and `connectTimeout` per attempt. The publishing and consuming connections fail over
   * independently. Env `AMQP_URL` as a comma-separated list.
   */
  urls?: string[];
  /** One retry tier per entry, in order; the last repeats. Env `RETRY_DELAYS` ("1s,10s,1m"); default `['1s', '10s', '1m']`. */
  delays?: Duration[];
  /** Handler calls in all, the first included. Env `RETRY_MAX_ATTEMPTS`; default: the number of tiers + 1. */
  maxAttempts?: number;
  /** Unacknowledged deliveries per consumer. Env `RETRY_PREFETCH`; default 20. */
  prefetch?: number;
  /**
   * The type of the queues the library declares for handlers. 'quorum' dead-letters at least once between the
   * queue and its tiers, and parks a message that keeps coming back unsettled (a handler that crashes the process).
   * Env `RETRY_QUEUE_TYPE`; default 'classic'.
   */
  queueType?: QueueType;
  /** The connection's name in the management UI and `rabbitmqctl list_connections`; default `nestjs-amqp-retry (pid <pid>)`. */
  connectionName?: string;
  /**
   * The application's name, recorded with its handler queues on the broker, so that `amqp-retry parked --app <name>`
   * finds them (and no other application's). Env `RETRY_APPLICATION`; default none (the queues are then found by
   * name, `--queue`). Printable text, at most 200 characters.
   */
  application?: string;
  /** Spacing of reconnection attempts after a connection loss: capped exponential backoff with 20% jitter. */
  reconnect?: {
    /** The wait before the first attempt. Default '100ms'. */
    initialDelay?: Duration;
    /** The longest wait between attempts. Default '30s'. */
    maxDelay?: Duration;
  };
  /**
   * How long a publish may wait for a lost connection to come back (re-sends included), for a channel, or for a full
   * socket buffer to drain, before it rejects; at least '100ms'. Env `RETRY_PUBLISH_TIMEOUT`; default '10s'.
   */
  publishTimeout?: Duration;
  /** How many publishes may wait for the connection at once; more reject at once. Default 1000. */
  publishBufferSize?: number;
  /**
   * Delayed delivery (`RetryPublisher.publish(..., { delay })`): the ladder of TTL queues is declared and its
   * forwarder consumes in every application that has it on. Default true, with the prefix 'amqp-retry.delay'
   * shared by every application on the vhost; `false` turns it off, `{ prefix }` uses a ladder of its own.
   * `queueType` (default: the module's `queueType`) 'quorum' makes the ladder's queues replicated quorum queues that
   * dead-letter at least once: on a cluster, a delayed message then survives the loss of a node. Its names start
   * with `<prefix>.quorum.`, so both kinds of ladder can share a vhost.
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
   * and the attempt counts as failed (retried or parked by the handler's policy); what the abandoned call does later
   * changes nothing. Keep it below the broker's consumer timeout (RabbitMQ 4.3 no longer applies one to classic
   * queues). Env `RETRY_HANDLER_TIMEOUT`; default none (0: no limit). `timeout` is the same option under the name a
   * handler's own has.
   */
  handlerTimeout?: Duration;
  /**
   * The same as `handlerTimeout`, under the name of the handler option it is the default of (`@RetryWithBackoff({ timeout })`).
   * Give one of the two; both, with different values, fail the start.
   */
  timeout?: Duration;
  /**
   * How long a publish (yours, a parked copy, a forwarded delayed message) waits for the broker's confirm before it
   * fails; a broker that blocks publishers over a memory or disk alarm never confirms. Env `RETRY_CONFIRM_TIMEOUT`;
   * default '10s'.
   */
  confirmTimeout?: Duration;
  /** How long one attempt to connect may take (TCP and AMQP handshake). Env `RETRY_CONNECT_TIMEOUT`; default '10s'. */
  connectTimeout?: Duration;
  /**
   * How a body becomes the handler's payload, for handlers without their own: 'json' (default: strict UTF-8, and a
   * content type that is absent or JSON; anything else is parked as malformed), 'raw' (the Buffer as it came), or a
   * function `(content, message) => payload` (a throw parks the message as malformed).
   */
  deserializer?: Deserializer;
  /**
   * Told of every handled, retried and parked delivery, publish, and connection or consumer change (see
   * RetryObserver): for alerts and audit. An observer that throws is logged once and never disturbs a message.
   */
  observers?: RetryObserver[];
  /**
   * Prometheus metrics with prom-client (an optional peer dependency, loaded only when this is on): `true` registers
   * them in prom-client's default registry, `{ registry }` in yours. Default off. See docs/operations.md, Observability.
   */
  metrics?: boolean | MetricsOptions;
  /**
   * OpenTelemetry tracing with @opentelemetry/api (an optional peer dependency, loaded only when this is on): trace
   * context in the headers of every publish, a consumer span per attempt. Your application registers the SDK.
   * Default off.
   */
  tracing?: boolean | TracingOptions;
  /**
   * How handler failures are logged. `retries: 'line'` (default): a warning for each retry; Nest's ExceptionsHandler,
   * which would print every failure's stack first, stays quiet (your exception filters still see every error).
   * `'nest'`: Nest's ExceptionsHandler logs each failure with its stack, and the retry lines are debug.
   * `parked: 'line'` (default): a park is one warning line (reason, queue, message id, parked id, error message); the
   * stack is in the parked copy (`x-exception-stack`). `'stack'`: the same warning followed by the handler's stack.
   */
  logging?: {
    /** How a handler's failure is logged: `'line'` (default) or `'nest'`. */
    retries?: RetryLogs;
    /** How a park is logged: `'line'` (default: one warning line) or `'stack'` (the line, then the handler's stack). */
    parked?: ParkLogs;
  };
  /** Handle each message once, for every handler without its own `idempotency` (see IdempotencyOptions). */
  idempotency?: IdempotencyOptions;
  /**
   * The transactional outbox (docs/outbox.md): `OutboxPublisher.publish(tx, message)` writes in your transaction, and
   * a relay in this instance publishes committed rows with confirms.
   */
  outbox?: OutboxOptions;
  /** The transactional inbox for every handler without its own `inbox` (see InboxOptions). */
  inbox?: InboxOptions;
  /**
   * A circuit breaker on every handler queue without its own `circuitBreaker`: `true` for the defaults, or options
   * (docs/outage-protection.md). Default off.
   */
  circuitBreaker?: boolean | CircuitBreakerOptions;
  /** At most `calls` handler calls per `per`, for every handler without its own `rateLimit` (each its own bucket). */
  rateLimit?: RateLimitOptions;
  /**
   * Beat to the retry console (docs/console.md): this instance's identity, queues, states, counts and timings on the
   * control exchange, every `intervalMs` (default 5000, 250 to 60000), so that the page served by another instance of
   * the application shows it. For instances that do not import `RetryDashboardModule` (workers, microservices), which
   * beats without it (its `heartbeatIntervalMs` then wins). A `RetryClient` has no handlers and never beats; a
   * `RetryServer` given a module's `engine` beats as that module says. Default false.
   * @example heartbeat: true
   */
  heartbeat?:
    | boolean
    | {
        /** Milliseconds between two beats, 250 to 60000; default 5000. An instance shows as gone after 3 missed beats. */
        intervalMs?: number;
      };
  /**
   * The broker users, besides the application's own, whose pause and resume commands on the control exchange it takes
   * (docs/outage-protection.md, "Who may"): the operators' user of `amqp-retry pause`, say. Default: every user the
   * broker lets write there. A command is taken only with its `userId` set, which the broker checks against its
   * sender's connection (this library's CLI, QueueControl and engine set it); any other is ignored with a warning.
   * @example controlUsers: ['ops']
   */
  controlUsers?: string[];
}

/**
 * Handle each message once: a copy whose key is recorded as handled is acked without calling the handler, and two
 * copies in flight at once never both run (docs/idempotency-and-ordering.md, "Handling each message once").
 * @example { store: new RedisIdempotencyStore({ url: 'redis://127.0.0.1:6379' }), ttl: '7d' }
 */
export interface IdempotencyOptions {
  /** Where handled keys are recorded: RedisIdempotencyStore, PostgresIdempotencyStore or your own. */
  store: IdempotencyStore;
  /**
   * Names a message: default its AMQP message id (RetryPublisher always sets one). A message without a key is
   * parked as malformed, so give a function for publishers that set no message id.
   */
  key?: MessageKeyFn;
  /** How long a key stays recorded as handled: a copy arriving later runs again. Default '1d'. */
  ttl?: Duration;
  /**
   * How long a claim lasts without renewal. A running handler renews it every third of this; a crashed one's claim
   * frees after it, so copies it had in flight wait up to this long. Default '30s'.
   */
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
   * When a message fails and waits in a retry tier: 'continue' (default) lets the key's later messages run meanwhile,
   * so the retried one ends up after them; 'hold' keeps them waiting in the consumer until the retry comes back and
   * settles, for at most its tier delay plus `holdGrace`, and at most prefetch - 1 messages (halfOpenCalls - 1 while
   * the circuit breaker is half-open, none while a quorum queue's consumer runs a suspect of a crash at prefetch 1).
   */
  whileRetrying?: 'continue' | 'hold';
  /** How long past its tier delay a held key waits for its retry to come back before it lets the others run. Default '10s'. */
  holdGrace?: Duration;
}

/**
 * What routes a message to its partition, read by the broker (RabbitMQ's consistent-hash exchange), so that every
 * publisher's messages land in the right partition, not only ours: a header, or the AMQP message id.
 */
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
  /**
   * While a message waits in a retry tier: 'continue' (default) lets its key's later messages run, so the retried one
   * ends up after them; 'hold' keeps them waiting until it comes back (README "Ordering").
   */
  whileRetrying?: 'continue' | 'hold';
  /** With 'hold': how long past its tier delay a key waits for its retry. Default '10s'. */
  holdGrace?: Duration;
  /**
   * How often each instance announces itself to the others; an instance not heard from for 3 heartbeats is gone and
   * its partitions move. Default '1s' (from '100ms' to '1m').
   */
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
   * How long one call of this handler may take: past it the call's `signal` aborts (with a HandlerTimeoutError as its
   * reason) and the attempt counts as failed, retried or parked like any failure; the abandoned call's late result
   * changes nothing. Default: the module's `handlerTimeout` (none); 0 turns it off for this handler.
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
   * Run the handler in a database transaction (`context.transaction`) that also records the message as handled; it
   * commits before the ack, and a copy already recorded is acked without running (docs/outbox.md). Default the
   * module's; `false` turns it off for this handler. Not with `idempotency`. Without an `adapter`, the module's inbox
   * adapter is used, else its outbox adapter (the table and other options are this handler's own).
   */
  inbox?: HandlerInboxOptions | false;
  /** Handle messages with the same key one at a time, in arrival order (within this consumer). */
  ordering?: OrderingOptions;
  /**
   * Declares the queue with `x-single-active-consumer`: one consumer of all instances gets deliveries, the others
   * stand by, so ordering holds across instances. RabbitMQ cannot change the arguments of an existing queue: turning
   * this on or off for a queue that exists fails the start with TopologyMismatchError. Default false.
   */
  singleActiveConsumer?: boolean;
  /**
   * Stops consuming this queue while its handler keeps failing (a dependency is down), and tries again later:
   * `true` for the defaults, options, or `false` to turn the module's default off (docs/outage-protection.md).
   */
  circuitBreaker?: boolean | CircuitBreakerOptions;
  /** At most `calls` handler calls per `per` in this process; `false` turns the module's default off. */
  rateLimit?: RateLimitOptions | false;
  /**
   * Splits the queue into `count` partition queues by a stable hash of `key` (the broker's consistent-hash exchange,
   * plugin `rabbitmq_consistent_hash_exchange`): each key's messages run in order, one partition on one instance at a
   * time, and the partitions spread over the running instances (docs/partitions.md). Not with `ordering` or
   * `singleActiveConsumer`, which it implies.
   * @example { count: 8, key: { header: 'x-account-id' }, whileRetrying: 'hold' }
   */
  partitions?: PartitionsOptions;
}
