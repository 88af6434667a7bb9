import type { ConsumeMessage } from 'amqplib';
import type { ParkReason } from '../delivery/delivery.decision.js';
import type { XDeath } from '../delivery/x-death.parser.js';
import type { QueueState } from '../breaker/queue.state.js';

/**
 * What the engine tells observers: metrics and tracing are built on it, and an application may add its own (alerts,
 * audit). Every method is optional. Calls are synchronous and happen on the delivery path: keep them quick, and do
 * slow work (I/O) later. A throw is caught and logged once per observer; it never changes what happens to a message.
 *
 * @example
 * ```ts
 * const alert: RetryObserver = { parked: (e) => e.reason === 'redelivery-limit' && pager.send(`${e.queue}: ${e.error}`) };
 * RetryModule.forRoot({ observers: [alert] });
 * ```
 */
export interface RetryObserver {
  /** A delivery reaches the handler. What it returns wraps the handler's call (a tracer makes its span current). */
  deliveryStarted?(event: DeliveryEvent): DeliveryScope | void;
  /** The handler returned: the delivery is acked. */
  handled?(event: DeliveryHandledEvent): void;
  /**
   * The handler threw: the delivery is retried (`retryTier` set) or parked (a `parked` event follows once it is); for a
   * request (`request` true), neither: its failure is answered to its caller.
   */
  failed?(event: DeliveryFailedEvent): void;
  /** A message was parked in an error queue (the copy confirmed, the original acked). */
  parked?(event: MessageParkedEvent): void;
  /** A message that expired in its queue or was pushed out by a length limit was dropped (the handler's `onExpired: 'drop'`). */
  dropped?(event: MessageDroppedEvent): void;
  /**
   * A message is about to be published: `headers` may be added to (a tracer adds `traceparent`). What it returns is
   * ended once the broker confirmed the message, or refused it (with the error).
   */
  publishing?(event: PublishingEvent): PublishScope | void;
  /** A delayed message entered the delay ladder (confirmed). */
  delayedPublished?(event: PublishedEvent): void;
  /** A due delayed message was forwarded to its target (confirmed). */
  forwarded?(event: PublishedEvent): void;
  /** The broker refused a publish of the application's, returned it as unroutable, or never confirmed it. */
  publishRejected?(event: PublishRejectedEvent): void;
  /** A connection to the broker opened: the first time, and after every loss (then `downMs` says for how long). */
  connectionUp?(event: ConnectionEvent): void;
  /** A connection to the broker was lost (it reconnects). */
  connectionLost?(event: ConnectionEvent): void;
  /**
   * The application closed a connection that was up (`app.close()`, `engine.close()`): it is down for good, and no
   * reconnection follows. Not a loss: `connectionLost` is not called for it.
   */
  connectionClosed?(event: ConnectionEvent): void;
  /** A consumer subscribed to its queue (at start, or after a recovery). */
  consumerUp?(event: ConsumerEvent): void;
  /** A consumer stopped consuming: its channel closed, the broker cancelled it, or the application stops. */
  consumerDown?(event: ConsumerDownEvent): void;
  /** The outbox relay published a row and the broker confirmed it. */
  outboxSent?(event: OutboxSentEvent): void;
  /** The outbox relay parked a row: the broker refused it for good, or no queue took it `maxUnroutableAttempts` times. */
  outboxParked?(event: OutboxParkedEvent): void;
  /** The outbox's backlog, read every few seconds by each relay. */
  outboxBacklog?(event: OutboxBacklogEvent): void;
  /**
   * A handler queue's state changed: its circuit breaker opened, half-opened or closed, or someone paused or resumed
   * it (`by`). One event per change, as the log line.
   */
  queueStateChanged?(event: QueueStateEvent): void;
  /** Each heartbeat, for each partition of a partitioned handler: its depth and whether this instance consumes it. */
  partitionObserved?(event: PartitionObservedEvent): void;
}

/** Wraps one handler call: `run` around it, `end` once after it, with the error if it threw. */
export interface DeliveryScope {
  /** Runs the handler's call (`fn`) and returns what it returns; a tracer runs it inside its span's context. */
  run?<T>(fn: () => T): T;
  /** Called once after the handler's call: with its error if it threw, without one if it returned. */
  end?(error?: unknown): void;
  /**
   * Called after a failed call's `end`, once the failure sends a copy on (to a retry tier, or parked): adds to `headers`
   * what the next attempt needs to continue this one. A tracer writes the attempt's trace context there when the
   * message came without one of its own. The copy carries what is added.
   */
  carry?(headers: Record<string, unknown>): void;
}

/**
 * Wraps one publish: `run` around the application's publish (a tracer makes its producer span current, so that
 * an instrumentation of amqplib nests under it), `end` once the broker confirmed it, or with the error.
 */
export interface PublishScope {
  /** Runs the publish (`fn`) and returns what it returns; a tracer runs it inside its producer span's context. */
  run?<T>(fn: () => T): T;
  /** Called once: without an error when the broker confirmed the message, with one when it refused it or never did. */
  end?(error?: unknown): void;
}

/** One delivery of a handler queue. */
export interface DeliveryEvent {
  /** The queue the message was consumed from. */
  queue: string;
  /** The microservices pattern it was dispatched to; absent for `@RetryWithBackoff` handlers. */
  pattern?: string;
  /** 1 for the first delivery, 2 for the first retry... */
  attempt: number;
  /** The attempts the handler has in all (its `maxAttempts`): the last one's failure parks the message. */
  maxAttempts: number;
  /** The delivery as amqplib gave it: body, properties, headers, fields. */
  message: ConsumeMessage;
  /** The broker's `x-death` entries: a retried message's first one names the exchange and routing key it came by. */
  deaths: XDeath[];
  /**
   * True for a transport request (a `@MessagePattern` answered to its caller): it runs once, and its failure is answered
   * to the caller, neither retried nor parked. Absent for every other delivery.
   */
  request?: true;
}

/** A handler call that returned: the delivery is acked. */
export interface DeliveryHandledEvent extends DeliveryEvent {
  /** How long the handler ran, in milliseconds. */
  durationMs: number;
}

/** A handler call that threw: the message is retried (`retryTier` set) or parked. */
export interface DeliveryFailedEvent extends DeliveryHandledEvent {
  /** What the handler threw. */
  error: unknown;
  /** The tier the message goes to (1 = the first delay), or undefined when it is parked. */
  retryTier?: number;
  /** The delay before the next attempt, when retried. */
  retryDelayMs?: number;
}

/** A message parked in an error queue: its copy confirmed by the broker, the original acked. */
export interface MessageParkedEvent {
  /** The queue the message came from (the delay ladder's ready queue for an undeliverable delayed message). */
  queue: string;
  /** The microservices pattern it was dispatched to; absent for `@RetryWithBackoff` handlers. */
  pattern?: string;
  /** The error queue the copy was published to. */
  errorQueue: string;
  /** Why it was parked: its attempts ran out, it was not retryable, it could not be decoded... */
  reason: ParkReason;
  /** The last error: what the handler threw, or what stopped the message before the handler. */
  error: unknown;
  /** Handler calls the message had (0 when parked before the handler). */
  handlerCalls: number;
  /** The original delivery as amqplib gave it. */
  message: ConsumeMessage;
}

/** A message that expired in a handler queue or was pushed out of it, dropped (the handler's `onExpired: 'drop'`). */
export interface MessageDroppedEvent {
  /** The handler queue the message expired in or was pushed out of. */
  queue: string;
  /** `expired`: its own expiration or the queue's message TTL; `maxlen`: the queue's length limit. */
  reason: 'expired' | 'maxlen';
  /** The delivery from the dead-letter queue, with the broker's death headers. */
  message: ConsumeMessage;
}

/** Which of the library's publishes. */
export type PublishKind = 'publish' | 'delayed' | 'forward' | 'park';

/** A publish about to be sent, by the application (through the library) or by the library itself. */
export interface PublishingEvent {
  /** Which publish: the application's, a delayed message's, a due message's forward, or a parked copy. */
  kind: PublishKind;
  /** The exchange it is published to ('' for the default exchange). */
  exchange: string;
  /** Its routing key. */
  routingKey: string;
  /** The headers to be published; an observer may add to them, never remove. */
  headers: Record<string, unknown>;
  /** The message's `messageId` property, when it has one. */
  messageId?: string;
}

/** A delayed message that entered the delay ladder, or a due one forwarded to its target: confirmed by the broker. */
export interface PublishedEvent {
  /** For a delayed message: its target. */
  exchange: string;
  /** The target's routing key. */
  routingKey: string;
  /** The delay asked for, in milliseconds (on `delayedPublished`). */
  delayMs?: number;
}

/** A publish that the broker refused (nack), returned as unroutable, or never confirmed. */
export interface PublishRejectedEvent {
  /** Which publish. */
  kind: PublishKind;
  /** The exchange it was published to. */
  exchange: string;
  /** Its routing key. */
  routingKey: string;
  /** Why: the error the publish failed with. */
  error: unknown;
}

/** A connection to the broker opened or was lost. */
export interface ConnectionEvent {
  /** The consuming connection or the publishing one. */
  role: 'consume' | 'publish';
  /** Why it was lost. */
  reason?: string;
  /** On `connectionUp` after a loss: how long the connection was down. */
  downMs?: number;
}

/** A consumer that subscribed to its queue. */
export interface ConsumerEvent {
  /** The queue consumed. */
  queue: string;
}

/** A consumer that stopped consuming. */
export interface ConsumerDownEvent extends ConsumerEvent {
  /** Why, in words: its channel closed, the broker cancelled it, or the application stops. */
  reason: string;
}

/** An outbox row published by the relay and confirmed by the broker. */
export interface OutboxSentEvent {
  /** The outbox table ("schema.table" with a schema). */
  table: string;
  /** The exchange the row's message was published to. */
  exchange: string;
  /** Its routing key. */
  routingKey: string;
  /** From the row's insert to the broker's confirm: the relay lag, in milliseconds. */
  lagMs: number;
}

/** An outbox row parked by the relay: the broker refused it for good, or no queue took it often enough. */
export interface OutboxParkedEvent {
  /** The outbox table ("schema.table" with a schema). */
  table: string;
  /** The exchange the row's message was for. */
  exchange: string;
  /** Its routing key. */
  routingKey: string;
  /** Why, in words. */
  reason: string;
}

/** The outbox's backlog, as one relay read it. */
export interface OutboxBacklogEvent {
  /** The outbox table ("schema.table" with a schema). */
  table: string;
  /** Rows not sent yet (committed, due or waiting for a retry). */
  waiting: number;
  /** Age of the oldest of them in milliseconds; 0 when none waits. */
  oldestAgeMs: number;
  /** Rows parked (refused by the broker), waiting for an operator. */
  parked: number;
  /** The table's size on disk in bytes, its indexes and TOAST included (sent rows count until the cleanup deletes them). */
  tableBytes: number;
}

/** A change of a handler queue's state (circuit breaker, pause). */
export interface QueueStateEvent {
  /** The handler queue. */
  queue: string;
  /** Its state before the change. */
  from: QueueState;
  /** Its state after the change. */
  to: QueueState;
  /** Why, in words: the failures that opened the circuit, the pause's reason... */
  reason: string;
  /** Who paused or resumed it; absent for the circuit breaker's own changes. */
  by?: string;
}

/** One partition of a partitioned handler, as one instance saw it at a heartbeat. */
export interface PartitionObservedEvent {
  /** The partitioned handler's queue (the name given to `@RetryWithBackoff`). */
  queue: string;
  /** The partition's number, from 0. */
  partition: number;
  /** Messages ready in the partition queue, as the broker said. */
  depth: number;
  /** Consumers of the partition queue on the broker (this instance's included): 1 active, the others waiting. */
  consumers: number;
  /** Whether this instance consumes the partition. */
  owned: boolean;
}
