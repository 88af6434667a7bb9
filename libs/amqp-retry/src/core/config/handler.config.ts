import { RetryConfigError } from '../../errors/retry-config.error.js';
import {
  readDelays,
  readDeserializer,
  readDuration,
  readFlag,
  readInteger,
  readName,
  readNumber,
  readQueueType,
  isPlainObject,
  refuseIllFormedText,
  TIME_LIMIT_RANGE,
  TTL_RANGE,
  showValue,
} from './config.readers.js';
import { DELAY_LADDER } from '../delivery/delay.plan.js';
import { retryabilityOf } from '../delivery/delivery.decision.js';
import { readIdempotency } from '../idempotency/idempotency.config.js';
import { readOrdering } from '../ordering/ordering.config.js';
import { MAX_ATTEMPTS_LIMIT, type ModuleConfig } from './module.config.js';
import type { RetryHandlerOptions } from './retry.options.js';
import { readInbox } from '../outbox/outbox.config.js';
import { readCircuitBreaker, readRateLimit } from '../breaker/breaker.config.js';
import { readQueueLimits } from './queue-limits.config.js';
import { readPartitions, type PartitionOf } from '../partitions/partitions.config.js';
import { keysOf, refuseUnknownKeys } from './option-keys.js';

/**
 * A handler's configuration after defaults and validation: everything the topology and the consumer need. What
 * resolveHandlerConfig returns, and what a partition's own configuration adds (partition.plan.ts): `exchangeArguments`
 * (of its hash exchange: what it hashes), `upstream` (the handler's own exchange, bound to the hash exchange),
 * `retryInPlace` (a failed message is retried in the consumer, unacked at its place, instead of through the tiers),
 * `partitionOf` (which partition of which handler it is) and `deadLetterQueue` (where the queue's expired and
 * over-length messages go; absent: `<queue>.dlx.dead`; partitions share their handler's).
 */
export type HandlerConfig = Omit<ReturnType<typeof resolveHandlerConfig>, 'exchange' | 'exchangeType'> & {
  exchange?: string;
  exchangeType: ExchangeType | 'x-consistent-hash';
  exchangeArguments?: Record<string, unknown>;
  upstream?: { exchange: string; exchangeType: ExchangeType; routingKeys: string[] };
  retryInPlace?: boolean;
  partitionOf?: PartitionOf;
  deadLetterQueue?: string;
};

/** Bytes kept free in a queue name for the suffixes of the derived names (".dlx.first", ".retry.100.4294967295ms.abcdef"). */
const NAME_RESERVE = 32;
const EXCHANGE_TYPES = ['topic', 'direct', 'fanout', 'headers'] as const;
type ExchangeType = (typeof EXCHANGE_TYPES)[number];
/** More tiers than this are refused: the last tier repeats, so more attempts need no more tiers. */
const MAX_TIERS = 100;

const BACKOFF_KEYS = keysOf<NonNullable<RetryHandlerOptions['backoff']>>({ initial: 1, multiplier: 1, max: 1, tiers: 1 });

function tiersFromBackoff(backoff: unknown, defaultTiers: number, at: (k: string) => string): number[] {
  if (!isPlainObject(backoff)) {
    throw new RetryConfigError(
      at('backoff'),
      `is ${showValue(backoff)}`,
      "Give { initial, multiplier, max, tiers }, e.g. { initial: '1s', multiplier: 2, max: '1h' }, or leave backoff out for the module's delays.",
    );
  }
  refuseUnknownKeys(backoff, BACKOFF_KEYS, 'backoff', at);
  const initial = readDuration(backoff.initial, at('backoff.initial'), "'1s'", TTL_RANGE);
  const multiplier = readNumber(backoff.multiplier, at('backoff.multiplier'), 1, 1_000, '2', 2);
  const max = readDuration(backoff.max, at('backoff.max'), "'1h'", TTL_RANGE, TTL_RANGE.max);
  const tiers = readInteger(backoff.tiers, at('backoff.tiers'), 1, MAX_TIERS, '5', defaultTiers);
  if (max < initial) {
    throw new RetryConfigError(
      at('backoff.max'),
      `(${max} ms) is shorter than backoff.initial (${initial} ms)`,
      'Make max at least initial, or leave it out.',
    );
  }
  return Array.from({ length: tiers }, (_, k) => Math.min(max, Math.ceil(initial * multiplier ** k)));
}

/**
 * Whether `name` is one the retry topology of `queue` derives for itself (see retry-topology.plan.ts): its dead-letter
 * exchanges and queue (`Q.dlx`, `Q.dlx.*`), its return exchange, its tiers, plan and presence queues (`Q.retry.*`,
 * those of older schedules included, which a later start deletes). Parking there loops or loses the message.
 */
const isDerivedName = (queue: string, name: string): boolean =>
  name === `${queue}.dlx` || name === `${queue}.return` || name.startsWith(`${queue}.dlx.`) || name.startsWith(`${queue}.retry.`);

/** What isDerivedName covers, as errors name it. */
const topologyNames = (queue: string): string => `a name the retry topology of "${queue}" derives (${queue}.dlx*, ${queue}.retry.*, ${queue}.return)`;

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * What `name` is in the topology the library declares for `owner`, or undefined when it is none of its names: its
 * retry topology (isDerivedName), and with partitions each partition's queue `Q.p<i>` and the names derived from it
 * (retired partitions' included), its parking queues `<errorQueue>.p<i>`, and `Q.partitions.*`.
 */
function derivedRole(owner: HandlerConfig, name: string): string | undefined {
  const { queue } = owner;
  if (isDerivedName(queue, name)) return topologyNames(queue);
  if (owner.partitions === undefined) return undefined;
  if (new RegExp(`^${escapeRegExp(queue)}\\.p\\d+($|\\.)`).test(name) || name.startsWith(`${queue}.partitions.`)) {
    return `a name the partitions of "${queue}" derive (${queue}.p<i>, ${queue}.p<i>.*, ${queue}.partitions.*)`;
  }
  if (owner.errorQueue !== `${queue}.error` && new RegExp(`^${escapeRegExp(owner.errorQueue)}\\.p\\d+$`).test(name)) {
    return `the parking queue of a partition of "${queue}" (${owner.errorQueue}.p<i>)`;
  }
  return undefined;
}

/**
 * Refuses a queue or parking queue under a delay ladder's prefix: the ladder's forwarder consumes `<prefix>.ready`,
 * and what it cannot forward it parks in `<prefix>.error`. Both the configured prefix and the default one are
 * refused: every application of the vhost with delayed delivery on runs a forwarder of the default ladder.
 */
function refuseLadderName(name: string, key: string, prefixes: ReadonlyArray<string | undefined>, example: string): void {
  for (const prefix of new Set(prefixes)) {
    if (prefix !== undefined && (name === prefix || name.startsWith(`${prefix}.`))) {
      throw new RetryConfigError(
        key,
        `is "${name}", a name of the delay ladder "${prefix}" (delayedDelivery), whose forwarder takes what arrives in ${prefix}.ready and parks the rest in ${prefix}.error`,
        `Give it a name outside "${prefix}.*", e.g. ${example}.`,
      );
    }
  }
}

/**
 * Refuses names too long for partitions: partition `i` is queue `<queue>.p<i>`, with derived names of its own, and
 * parks in `<errorQueue>.p<i>` when the handler names its parking queue (partition.plan.ts).
 */
function refuseLongPartitionNames(queue: string, errorQueue: string | undefined, count: number, at: (key: string) => string): void {
  const suffix = `.p${count - 1}`;
  const named = [
    { key: 'queue', name: queue, limit: 255 - NAME_RESERVE - suffix.length },
    { key: 'errorQueue', name: errorQueue, limit: 255 - suffix.length },
  ];
  for (const { key, name, limit } of named) {
    if (name !== undefined && Buffer.byteLength(name) > limit) {
      throw new RetryConfigError(
        at(key),
        `is ${Buffer.byteLength(name)} bytes long`,
        `Use at most ${limit} bytes with ${count} partitions: AMQP names are limited to 255, and each partition's names append "${suffix}" and the library's suffixes.`,
      );
    }
  }
}

/** The options a partitioned handler cannot take, each with why and what to give instead. */
const REFUSED_WITH_PARTITIONS = {
  ordering: 'Partitions keep order by their key already: give whileRetrying and holdGrace inside partitions, and leave ordering out.',
  singleActiveConsumer: 'Each partition queue has a single active consumer already; leave singleActiveConsumer out.',
  circuitBreaker:
    "A partition's order holds only while one consumer runs it, and an open circuit cancels that consumer: leave circuitBreaker out (or false) on a partitioned handler.",
  rateLimit:
    'The limit is counted per handler queue, and a partitioned handler runs one per partition: leave rateLimit out (or false), or lower prefetch.',
};

/**
 * Resolves one `@RetryWithBackoff` declaration against the module configuration. `where` names the method
 * ("OrdersHandler.onOrderCreated") so that an error points at the code to change.
 */
export function resolveHandlerConfig(
  options: RetryHandlerOptions,
  module: ModuleConfig,
  where: string,
  at: (key: string) => string = (key) => `@RetryWithBackoff option "${key}" of ${where}`,
) {
  const queue = readName(options.queue, at('queue'), NAME_RESERVE, "'orders.created'");
  const exchange = options.exchange === undefined ? undefined : readName(options.exchange, at('exchange'), 0, "'orders'");
  const exchangeType = options.exchangeType ?? 'topic';
  if (!EXCHANGE_TYPES.includes(exchangeType)) {
    throw new RetryConfigError(at('exchangeType'), `is ${showValue(exchangeType)}`, `Use one of ${EXCHANGE_TYPES.join(', ')}.`);
  }
  const keys = options.routingKey === undefined ? ['#'] : ([] as unknown[]).concat(options.routingKey);
  if (keys.length === 0 || keys.some((k) => typeof k !== 'string' || Buffer.byteLength(k) > 255)) {
    throw new RetryConfigError(
      at('routingKey'),
      `is ${showValue(options.routingKey)}`,
      "Give a binding key or a list of them, e.g. 'order.created' or ['order.*'].",
    );
  }
  for (const key of keys as string[]) refuseIllFormedText(key, at('routingKey'), "'order.created'");
  if (options.delays !== undefined && options.backoff !== undefined) {
    throw new RetryConfigError(at('delays'), 'is given together with "backoff"', 'Give one of them: delays lists the tiers, backoff computes them.');
  }
  const explicitAttempts =
    options.maxAttempts !== undefined ? readInteger(options.maxAttempts, at('maxAttempts'), 1, MAX_ATTEMPTS_LIMIT, '5') : module.maxAttempts;
  const delaysMs =
    options.delays !== undefined
      ? readDelays(options.delays, at('delays'), "['1s', '10s', '1m']")
      : options.backoff !== undefined
        ? tiersFromBackoff(options.backoff, Math.min(MAX_TIERS, Math.max(1, (explicitAttempts ?? 4) - 1)), at)
        : module.delaysMs;
  if (delaysMs.length > MAX_TIERS) {
    throw new RetryConfigError(
      at('delays'),
      `has ${delaysMs.length} tiers`,
      `Use at most ${MAX_TIERS}; the last tier repeats, so more attempts need no more tiers.`,
    );
  }
  const errorQueue = options.errorQueue === undefined ? `${queue}.error` : readName(options.errorQueue, at('errorQueue'), 0, `'${queue}.error'`);
  if (errorQueue === queue) {
    throw new RetryConfigError(at('errorQueue'), `is the handler's own queue "${queue}"`, `Park elsewhere, e.g. '${queue}.error'.`);
  }
  if (isDerivedName(queue, errorQueue)) {
    throw new RetryConfigError(at('errorQueue'), `is "${errorQueue}", ${topologyNames(queue)}`, `Park in a queue of its own, e.g. '${queue}.error'.`);
  }
  const ladders = [module.delayPrefix, DELAY_LADDER.prefix];
  refuseLadderName(queue, at('queue'), ladders, "'orders.created'");
  refuseLadderName(errorQueue, at('errorQueue'), ladders, `'${queue}.error'`);
  const { nonRetryable } = options;
  const classes = Array.isArray(nonRetryable) && nonRetryable.every((c) => typeof c === 'function');
  if (nonRetryable !== undefined && typeof nonRetryable !== 'function' && !classes) {
    throw new RetryConfigError(
      at('nonRetryable'),
      'is neither a list of error classes nor a predicate',
      'Use e.g. [ValidationError] or (error) => error instanceof ValidationError.',
    );
  }
  const idempotency =
    options.idempotency === false ? undefined : options.idempotency === undefined ? module.idempotency : readIdempotency(options.idempotency, at);
  const inbox =
    options.inbox === false
      ? undefined
      : options.inbox === undefined
        ? module.inbox
        : readInbox(options.inbox, at, { moduleAdapter: module.inbox?.adapter ?? module.outbox?.adapter });
  if (inbox && idempotency) {
    throw new RetryConfigError(
      at(options.inbox === undefined ? 'idempotency' : 'inbox'),
      'is given together with an inbox',
      'The inbox already handles each message once, in your transaction: give one of them (idempotency: false, or inbox: false).',
    );
  }
  const partitions = options.partitions === undefined ? undefined : readPartitions(options.partitions, at);
  const refuseWithPartitions = (key: keyof typeof REFUSED_WITH_PARTITIONS, given: unknown): void => {
    if (partitions !== undefined && given !== undefined) {
      throw new RetryConfigError(at(key), 'is given together with "partitions"', REFUSED_WITH_PARTITIONS[key]);
    }
  };
  if (partitions !== undefined) {
    refuseLongPartitionNames(queue, options.errorQueue === undefined ? undefined : errorQueue, partitions.count, at);
    refuseWithPartitions('ordering', options.ordering);
    if (exchange === queue) {
      throw new RetryConfigError(
        at('exchange'),
        `is "${exchange}", the queue's own name, which partitions give to their hash exchange`,
        'Name the exchange otherwise, or leave it out and publish to the exchange named like the queue.',
      );
    }
    refuseWithPartitions('singleActiveConsumer', options.singleActiveConsumer);
  }
  // A cancelled partition consumer lets another instance's standby take over mid-key: the module's defaults skip partitions.
  const circuitBreaker =
    options.circuitBreaker === undefined ? (partitions ? undefined : module.circuitBreaker) : readCircuitBreaker(options.circuitBreaker, at);
  refuseWithPartitions('circuitBreaker', circuitBreaker);
  const rateLimit = options.rateLimit === undefined ? (partitions ? undefined : module.rateLimit) : readRateLimit(options.rateLimit, at);
  refuseWithPartitions('rateLimit', rateLimit);
  const queueType = options.queueType === undefined ? module.queueType : readQueueType(options.queueType, at('queueType'));
  return {
    queue,
    exchange,
    exchangeType,
    routingKeys: keys as string[],
    /** Tier delays in ms, tier 1 first; the last repeats. */
    delaysMs,
    maxAttempts: explicitAttempts ?? delaysMs.length + 1,
    /** The longest a handler call may take, in ms; 0: no limit. */
    timeoutMs: readDuration(options.timeout, at('timeout'), "'30s'", TIME_LIMIT_RANGE, module.handlerTimeoutMs),
    errorQueue,
    prefetch: readInteger(options.prefetch, at('prefetch'), 1, 65_535, '20', module.prefetch),
    queueType,
    deserializer: options.deserializer === undefined ? module.deserializer : readDeserializer(options.deserializer, at('deserializer')),
    isRetryable: retryabilityOf(nonRetryable),
    retryLogs: module.retryLogs,
    /** Handle each message once (this handler's, else the module's); undefined: every copy runs. */
    idempotency,
    /** Run in a transaction that records the message as handled (this handler's, else the module's); undefined: no inbox. */
    inbox,
    /** One at a time per key, in arrival order; undefined: deliveries run side by side up to prefetch. */
    ordering: options.ordering === undefined ? undefined : readOrdering(options.ordering, at),
    singleActiveConsumer: readFlag(options.singleActiveConsumer, at('singleActiveConsumer')),
    /** Stop consuming while the handler keeps failing (this handler's, else the module's); undefined: never. */
    circuitBreaker,
    /** At most so many handler calls per period in this process; undefined: no limit. */
    rateLimit,
    /** Split into partition queues (docs/partitions.md); the engine runs one handler per partition. */
    partitions,
    /** The queue's limits and arguments, and what happens to a message that expired or was pushed out of it. */
    limits: readQueueLimits(options, queueType, at),
  };
}

/**
 * Checks the handlers together, before anything is declared: one handler per queue, no queue or parking queue among
 * the names the library derives for a handler (derivedRole), and no queue another's error queue (its parks would be
 * retried).
 */
export function assertDistinctQueues(handlers: ReadonlyArray<{ config: HandlerConfig; where: string }>): void {
  const owners = new Map<string, string>();
  for (const { config, where } of handlers) {
    const owner = owners.get(config.queue);
    if (owner !== undefined) {
      throw new RetryConfigError(
        `@RetryWithBackoff option "queue" of ${where}`,
        `is "${config.queue}", which ${owner} consumes already`,
        'Give each handler its own queue; to run two handlers on one message, bind two queues to the exchange.',
      );
    }
    owners.set(config.queue, where);
  }
  for (const { config, where } of handlers) {
    for (const other of handlers) {
      for (const key of ['queue', 'errorQueue'] as const) {
        const role = derivedRole(other.config, config[key]);
        if (role === undefined) continue;
        throw new RetryConfigError(
          `@RetryWithBackoff option "${key}" of ${where}`,
          `is "${config[key]}", ${role}, which belongs to ${other.where}`,
          `Give it a name outside those of "${other.config.queue}"${key === 'errorQueue' ? `, e.g. '${config.queue}.error'` : ''}: the names the library derives for a handler are that handler's alone.`,
        );
      }
    }
  }
  for (const { config, where } of handlers) {
    const owner = owners.get(config.errorQueue);
    if (owner !== undefined) {
      throw new RetryConfigError(
        `@RetryWithBackoff option "errorQueue" of ${where}`,
        `is "${config.errorQueue}", the queue that ${owner} consumes`,
        `Park in a queue of its own, e.g. '${config.queue}.error'.`,
      );
    }
  }
}
