/**
 * The library's wire vocabulary: every message header it writes or reads, and every queue argument it declares, named
 * once. Writers and readers use these constants, never the strings, so that a name cannot drift between the two
 * (header.names.spec.ts writes each group and reads it back). The values are a public contract (operators' tools
 * and the README read them): change one only with a migration.
 */

/** Headers the broker writes: read, never written (but removed from a parked copy, see BROKER_DEATH_HEADERS). */
export const BrokerHeader = {
  /** The death history: one entry per queue and reason, with counts (x-death.parser.ts). */
  death: 'x-death',
  /** Quorum queues: deliveries that were never settled (RabbitMQ 3.x, and 4.x for a returned message). */
  deliveryCount: 'x-delivery-count',
  /** Quorum queues, RabbitMQ 4.3+: every return of the message, whatever its cause (delivery.count.ts). */
  acquiredCount: 'x-acquired-count',
  firstDeathQueue: 'x-first-death-queue',
  firstDeathReason: 'x-first-death-reason',
  firstDeathExchange: 'x-first-death-exchange',
  lastDeathQueue: 'x-last-death-queue',
  lastDeathReason: 'x-last-death-reason',
  lastDeathExchange: 'x-last-death-exchange',
} as const;

/** Headers of a parked copy: why, when and from where it was parked (README "The parking queue"). */
export const ParkedHeader = {
  reason: 'x-parked-reason',
  parkedAt: 'x-parked-at',
  /** Unique per park: what operators name a parked message by. */
  id: 'x-parked-id',
  /** Headers left out of the copy to keep it publishable, comma-separated. */
  droppedHeaders: 'x-parked-dropped-headers',
  exceptionMessage: 'x-exception-message',
  exceptionStack: 'x-exception-stack',
  /** The queue it failed in, where a replay sends it. This and the two below stay on a replayed copy (REPLAY_ROUTE_HEADERS). */
  originalQueue: 'x-original-queue',
  /** Where it was first published: a replayed copy's route, which reaches its queue by name (replayed-route.reader.ts). */
  originalExchange: 'x-original-exchange',
  originalRoutingKey: 'x-original-routing-key',
  /** The `expiration` the message was published with, which the copy does not keep (it would expire in the parking queue). */
  originalExpiration: 'x-original-expiration',
  /** The delivery's own `userId`, which the copy cannot keep (the broker checks it against the publisher). */
  originalUserId: 'x-original-user-id',
  /** Handler calls made before the park. */
  retryAttempts: 'x-retry-attempts',
  /** The broker's `x-death` as it was at the park (a replay starts afresh without it). */
  deathHistory: 'x-retry-death-history',
  /** Set on a replayed copy. */
  replayedAt: 'x-replayed-at',
} as const;

/** Headers of a first failure moved into a tier by publishing, not by the broker's dead-lettering (first-failure.headers.ts). */
export const FirstFailureHeader = {
  /** The queue the message failed in first, counted as an attempt there. */
  queue: 'x-retry-first-failure',
  /** Where the moved message was first published, which its `x-death` no longer tells (its first rejection names the tier). */
  exchange: 'x-retry-first-exchange',
  routingKey: 'x-retry-first-routing-key',
} as const;

/** Headers of a delayed message on its way through the delay ladder (delay.plan.ts). */
export const DelayHeader = {
  /** The exchange the forwarder republishes a due message to ('' is the default exchange). */
  targetExchange: 'x-delay-target-exchange',
  /** The routing key the forwarder republishes a due message with: the publisher's own key. */
  targetRoutingKey: 'x-delay-target-routing-key',
  /** The delay the publisher asked for, in milliseconds. */
  ms: 'x-delay-ms',
  /** When the message is due (publish time + delay), as an ISO 8601 string. */
  dueAt: 'x-delay-due-at',
  /**
   * A delayed message's own `expiration` through the ladder, where the property itself would expire the message in its
   * first level, early; the forwarder puts it back as the property of the message it delivers.
   */
  expiration: 'x-delay-expiration',
  /**
   * `CC` routing keys carried through the ladder, where a `CC` header would be routed at every level (a key with a
   * digit where a level reads one copies the message into the ladder again); the forwarder delivers them as `CC` and
   * drops the header.
   */
  cc: 'x-delay-cc',
  /** As `cc`, for `BCC`: the broker routes a BCC header at the first routing and strips it, so the ladder carries the keys. */
  bcc: 'x-delay-bcc',
  /** How often a forwarder gave the message back to the ladder because its target refused it (refused-target.policy.ts). */
  givenBack: 'x-delay-given-back',
} as const;

/** Queue arguments the library declares (retry-topology.plan.ts, delay.plan.ts). */
export const QueueArgument = {
  queueType: 'x-queue-type',
  messageTtl: 'x-message-ttl',
  deadLetterExchange: 'x-dead-letter-exchange',
  deadLetterRoutingKey: 'x-dead-letter-routing-key',
  deadLetterStrategy: 'x-dead-letter-strategy',
  overflow: 'x-overflow',
  deliveryLimit: 'x-delivery-limit',
  singleActiveConsumer: 'x-single-active-consumer',
  maxLength: 'x-max-length',
  maxLengthBytes: 'x-max-length-bytes',
  maxPriority: 'x-max-priority',
} as const;
