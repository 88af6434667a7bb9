/**
 * Delayed delivery without broker plugins: a fixed ladder of TTL queues (docs/design.md section 3).
 *
 * A delay in ms is written in base 8. Position p has one queue per digit d, holding every message for d * 8^p ms; a
 * message waits in the queue of each nonzero digit, highest first, then reaches the ready queue, whose consumer (the
 * forwarder) republishes it to the target named in its headers. Every message in a queue has the same TTL, so
 * messages leave in arrival order: a short delay never waits behind a long one.
 *
 * Why base 8 and a 1 ms unit (RabbitMQ 3.10, 1,000 msgs/s, persistent; bench/measure-delay-hops.mjs):
 * - every hop adds about 1.5 ms at the median (a classic queue rounds its expiry timer up to the next ms), so the
 *   base bounds the worst-case lateness.
 * - each position's topic exchange matches the whole key, so broker CPU grows with the square of the positions. Base
 *   2 saturated the broker (p50 370-440 ms for 32 hops); base 4 reached p99 42-47 ms at 16 hops; base 8 stays at p99
 *   22 ms at 11 hops; base 16 would gain 8 ms more for 121 queues instead of 74.
 * - a coarser unit removes hops only by adding about as much rounding.
 */

import type { MessageProperties, Options } from 'amqplib';
import { type Duration, MAX_TTL_MS, readDurationWithin } from '../time/duration.reader.js';
import { headersOf, readExpiration, republishProperties } from '../message/message.properties.js';
import type { BindingDeclaration, ExchangeDeclaration, QueueDeclaration, QueueType, TopologyPlan } from '../topology/topology.types.js';
import { QUORUM_DEAD_LETTERING, queueTypeArgument } from '../topology/queue-type.mismatch.js';
import { BrokerHeader, DelayHeader, QueueArgument } from '../headers/header.names.js';
import { copyOwn } from '../headers/own-keys.copy.js';
import { readDeathHistory } from './x-death.parser.js';
import { withoutDeliveryCounts } from './delivery.count.js';
import type { Route } from './replayed-route.reader.js';

/** Layout of the delay ladder. */
export const DELAY_LADDER = {
  /** Default prefix of every exchange and queue the ladder declares. */
  prefix: 'amqp-retry.delay',
  /**
   * Part of every level's name. Bump it whenever `base`, `positions` or `unitMs` change: new names avoid a 406 or the
   * old layout's bindings, and messages in the old levels still drain into the shared ready queue.
   */
  version: 1,
  /** Resolution of a delay; delays are rounded up to it, never down. */
  unitMs: 1,
  /** Digit values per position; a position has one queue per nonzero digit. */
  base: 8,
  /** Digit positions: 8^11 units cover MAX_DELAY_MS. */
  positions: 11,
} as const;

/** Longest delay: 2^32 - 1 ms (about 49.7 days), RabbitMQ's limit for expiry timers; position 10 has digits 1..3 only. */
export const MAX_DELAY_MS = MAX_TTL_MS;

/** Headers the library adds to a message it sends through the ladder. */
export interface DelayHeaders {
  readonly [DelayHeader.targetExchange]: string;
  readonly [DelayHeader.targetRoutingKey]: string;
  readonly [DelayHeader.ms]: number;
  readonly [DelayHeader.dueAt]: string;
}

/** Where a delayed message goes once it is due. */
export type DelayTarget = Readonly<Route>;

/** Everything to declare, durable, in order: exchanges, then queues, then bindings. */
export interface DelayTopology extends TopologyPlan {
  /** The prefix of every name in the ladder: the configured prefix, plus `.quorum` for a quorum ladder. */
  readonly prefix: string;
  /** The type of the ladder's queues. */
  readonly queueType: QueueType;
  /** The queue the forwarder consumes. */
  readonly readyQueue: string;
  /** Where the forwarder parks a due message it cannot deliver (no target headers, target exchange gone). */
  readonly errorQueue: string;
}

/** How to publish a delayed message: straight to its target, or into the ladder. */
export type DelayedPublishPlan =
  | { readonly kind: 'direct' }
  | (DelayTarget & {
      readonly kind: 'ladder';
      /** Merge over the message's own headers. */
      readonly headers: DelayHeaders;
    });

const { base, positions, unitMs, version } = DELAY_LADDER;
const MAX_UNITS = Math.floor(MAX_DELAY_MS / unitMs);

/** Highest digit at a position: base - 1, except where a larger one would pass MAX_DELAY_MS. */
const maxDigitAt = (position: number): number => Math.min(base - 1, Math.floor(MAX_UNITS / base ** position));

const readyName = (prefix: string): string => `${prefix}.ready`;

/**
 * Whether a registered queue is a delay ladder's ready queue (`<prefix>.ready`, parking in `<prefix>.error`, no tiers)
 * rather than a handler queue: the page shows it apart, as its parked messages are undeliverable delayed messages.
 */
export const isDelayLadderQueue = ({ queue, errorQueue, tiers }: { queue: string; errorQueue: string; tiers: readonly string[] }): boolean =>
  tiers.length === 0 && queue.endsWith('.ready') && errorQueue === errorName(queue.slice(0, -'.ready'.length));
const errorName = (prefix: string): string => `${prefix}.error`;
const levelExchange = (prefix: string, position: number): string =>
  position < 0 ? readyName(prefix) : `${prefix}.v${version}.p${String(position).padStart(2, '0')}`;
/** Level queues carry their TTL in their name, so a changed TTL is a new queue, never a 406. */
const levelQueue = (prefix: string, position: number, digit: number): string =>
  `${levelExchange(prefix, position)}.${digit * base ** position * unitMs}ms`;

/** Matches keys whose word for `position` is `digit`; the key lists the highest position first. */
const digitPattern = (position: number, digit: number): string => `${'*.'.repeat(positions - 1 - position)}${digit}.#`;

/**
 * Throws a RangeError unless `delayMs` is a finite number of milliseconds from 0 to MAX_DELAY_MS.
 * @example assertValidDelay(-5) // RangeError: Invalid delay -5 ms: a delay must be ...
 */
export function assertValidDelay(delayMs: unknown): asserts delayMs is number {
  if (typeof delayMs === 'number' && Number.isFinite(delayMs) && delayMs >= 0 && delayMs <= MAX_DELAY_MS) return;
  const shown = typeof delayMs === 'number' ? `${delayMs} ms` : `(a ${typeof delayMs})`;
  throw new RangeError(
    `Invalid delay ${shown}: a delay must be a finite number of milliseconds from 0 to ${MAX_DELAY_MS} ` +
      `(about ${(MAX_DELAY_MS / 86_400_000).toFixed(1)} days).`,
  );
}

/**
 * Reads a publish's `delay` option: a Duration from 0 to MAX_DELAY_MS, rounded up to whole milliseconds; else throws a
 * RangeError.
 * @example readPublishDelay('90s') // 90000
 */
export function readPublishDelay(delay: Duration): number {
  const read = readDurationWithin(delay, 0, MAX_DELAY_MS);
  if (read.ok) return read.ms;
  if (read.problem === 'not-a-duration') {
    const shown = typeof delay === 'string' ? `"${delay}"` : String(delay);
    throw new RangeError(
      `Invalid delay ${shown}: use milliseconds (1500) or a duration such as '250ms', '90s', '30m', '3d', from 0 to ${MAX_DELAY_MS} ms ` +
        `(about ${(MAX_DELAY_MS / 86_400_000).toFixed(1)} days).`,
    );
  }
  assertValidDelay(read.ms); // out of range: throws, worded as for a delay given in ms
  return read.ms;
}

/**
 * The levels a message with this delay waits in, highest first; none for 0. Their TTLs add up to the
 * delay rounded up to a whole unit, so a message is never early.
 * @example delayLevels(1500) // [{ position: 3, digit: 2, ttlMs: 1024 }, ..., { position: 0, digit: 4, ttlMs: 4 }]
 */
export function delayLevels(delayMs: number) {
  assertValidDelay(delayMs);
  const levels: Array<{ position: number; digit: number; ttlMs: number }> = [];
  // Arithmetic, not bitwise: bitwise operators truncate to 32-bit signed integers.
  let rest = Math.ceil(delayMs / unitMs);
  for (let position = 0; rest > 0; position++, rest = Math.floor(rest / base)) {
    const digit = rest % base;
    if (digit > 0) levels.push({ position, digit, ttlMs: digit * base ** position * unitMs });
  }
  return levels.reverse();
}

/**
 * The prefix every name of a ladder starts with. A quorum ladder has names of its own (`<prefix>.quorum.…`): a queue's
 * type cannot change, and the two kinds of ladder must not share exchanges, or a message would wait in both.
 * @example delayLadderPrefix('amqp-retry.delay', 'quorum') // 'amqp-retry.delay.quorum'
 */
export const delayLadderPrefix = (prefix: string, queueType: QueueType = 'classic'): string => (queueType === 'quorum' ? `${prefix}.quorum` : prefix);

/** A node lost between two levels must not lose the message (docs/design.md section 16). */
const QUORUM_LEVEL = { ...queueTypeArgument('quorum'), ...QUORUM_DEAD_LETTERING };
const CLASSIC_LEVEL = queueTypeArgument('classic');

/**
 * The ladder's exchanges, queues and bindings, the same fixed set whatever delays are used. Position p has a topic
 * exchange that routes on the key's word for p: digit d to the level queue (p, d), digit 0 on to position p-1's
 * exchange. Each level queue dead-letters (keeping the key) to position p-1's exchange; below position 0 sits the
 * ready exchange (fanout) and queue. A quorum ladder's ready queue dead-letters into the error queue, so that a
 * message its delivery limit (20 by default on RabbitMQ 4) takes is parked, not dropped. Only forwarders lost with the
 * message in hand, time after time, count towards it: a forwarder never returns a message (a refused one goes back
 * through the ladder, as a new message, see planGiveBack).
 */
export function planDelayTopology(configuredPrefix: string = DELAY_LADDER.prefix, queueType: QueueType = 'classic'): DelayTopology {
  const prefix = delayLadderPrefix(configuredPrefix, queueType);
  const quorum = queueType === 'quorum';
  // Every queue states its type (see queueTypeArgument): a vhost's default type must not decide it.
  const level = quorum ? QUORUM_LEVEL : CLASSIC_LEVEL;
  const exchanges: ExchangeDeclaration[] = [{ name: readyName(prefix), type: 'fanout' }];
  const queues: QueueDeclaration[] = [
    {
      name: readyName(prefix),
      arguments: quorum
        ? { ...QUORUM_LEVEL, [QueueArgument.deadLetterExchange]: '', [QueueArgument.deadLetterRoutingKey]: errorName(prefix) }
        : CLASSIC_LEVEL,
    },
    { name: errorName(prefix), arguments: queueTypeArgument(queueType) },
  ];
  const bindings: BindingDeclaration[] = [{ source: readyName(prefix), destination: readyName(prefix), destinationType: 'queue', pattern: '' }];
  for (let position = 0; position < positions; position++) {
    const exchange = levelExchange(prefix, position);
    const next = levelExchange(prefix, position - 1);
    exchanges.push({ name: exchange, type: 'topic' });
    for (let digit = 1; digit <= maxDigitAt(position); digit++) {
      const queue = levelQueue(prefix, position, digit);
      // No x-dead-letter-routing-key: the key must survive every hop, as it holds the remaining digits.
      queues.push({
        name: queue,
        arguments: { ...level, [QueueArgument.messageTtl]: digit * base ** position * unitMs, [QueueArgument.deadLetterExchange]: next },
      });
      bindings.push({ source: exchange, destination: queue, destinationType: 'queue', pattern: digitPattern(position, digit) });
    }
    bindings.push({ source: exchange, destination: next, destinationType: 'exchange', pattern: digitPattern(position, 0) });
  }
  return { prefix, queueType, exchanges, queues, bindings, readyQueue: readyName(prefix), errorQueue: errorName(prefix) };
}

/**
 * Where to publish a message due in `delayMs`: for 0, straight to the target; otherwise into the ladder, at the
 * exchange of the highest nonzero digit, with the digits as the routing key and the target in headers. The message
 * must carry no `expiration` (see ladderProperties). Throws a RangeError for an invalid delay.
 * @example
 * planDelayedPublish(1500, { exchange: 'orders', routingKey: 'order.created' }, Date.now())
 * // { kind: 'ladder', exchange: 'amqp-retry.delay.v1.p03', routingKey: '0.0.0.0.0.0.0.2.7.3.4', headers: {...} }
 */
export function planDelayedPublish(delayMs: number, target: DelayTarget, nowMs: number, prefix: string = DELAY_LADDER.prefix): DelayedPublishPlan {
  const levels = delayLevels(delayMs);
  const top = levels[0];
  if (top === undefined) return { kind: 'direct' };
  const digits = new Array<number>(positions).fill(0);
  for (const { position, digit } of levels) digits[positions - 1 - position] = digit;
  return {
    kind: 'ladder',
    exchange: levelExchange(prefix, top.position),
    routingKey: digits.join('.'),
    headers: {
      [DelayHeader.targetExchange]: target.exchange,
      [DelayHeader.targetRoutingKey]: target.routingKey,
      [DelayHeader.ms]: delayMs,
      [DelayHeader.dueAt]: new Date(nowMs + delayMs).toISOString(),
    },
  };
}

/**
 * Throws a TypeError when the headers of a message to delay carry an `x-death` the broker would not have written: every
 * level of the ladder dead-letters, and RabbitMQ 3.10 crashes a classic queue process that dead-letters a message whose
 * `x-death` holds anything but tables (the queue restarts, the messages around it are lost, other applications' too
 * on a shared ladder). A well-formed one, copied from a delivered message, passes.
 */
export function assertLadderHeaders(headers: Readonly<Record<string, unknown>> | null | undefined): void {
  const history = readDeathHistory(headers?.[BrokerHeader.death]);
  if (history.ok) return;
  throw new TypeError(
    `Invalid header ${BrokerHeader.death} for a delayed message (${history.problem}): the broker writes that header, and a ` +
      `delayed message is dead-lettered through the delay ladder with it. Remove ${BrokerHeader.death} from the headers, or pass ` +
      'the death history under another header name.',
  );
}

/**
 * The properties to send a delayed message into the ladder with: persistent (it may wait for weeks), the plan's headers
 * over the caller's, and no `expiration`, which would make it leave its first level early: it rides in
 * DelayHeader.expiration and applies from delivery (see forwardedProperties). Throws a RangeError for a malformed one.
 */
export function ladderProperties(properties: Options.Publish, headers: DelayHeaders): Options.Publish {
  const { expiration, CC, BCC, ...rest } = properties;
  const kept = readExpiration(expiration);
  // The library's headers only: ones the caller's headers carry (a copy of a delivered message) must not come back.
  // copyOwn and Object.assign on the fresh objects, not spreads followed by keys (docs/performance.md).
  const own = copyOwn(properties.headers, headers);
  // CC and BCC route wherever the message is routed: at every exchange of the ladder, and again each time a level
  // dead-letters it. A CC key whose word for a position is a digit would copy it into a level, or through a `0` binding
  // past the level's wait (early, and more than once). So both ride in headers of the library's, and only the
  // forwarder's publish routes them, at the target. A `CC` header of a copy already in the ladder is routed there too.
  const cc = routingKeys(CC ?? own.CC);
  const bcc = routingKeys(BCC ?? own.BCC);
  for (const stale of [DelayHeader.expiration, DelayHeader.cc, DelayHeader.bcc, 'CC', 'BCC']) delete own[stale];
  if (kept !== undefined) own[DelayHeader.expiration] = kept;
  if (cc !== undefined) own[DelayHeader.cc] = cc;
  if (bcc !== undefined) own[DelayHeader.bcc] = bcc;
  return Object.assign(rest, { persistent: true, mandatory: true, headers: own });
}

/**
 * The properties the forwarder delivers a due message with (mandatory): its own, its headers without the ladder's
 * deaths (withoutDelayDeaths) and the library's delay headers, and what those carried (see ladderProperties): the
 * `expiration` of DelayHeader.expiration (none when malformed: a message published by another client must still be
 * delivered), the `CC` and `BCC` of DelayHeader.cc and DelayHeader.bcc. A BCC list must never reach a consumer: its
 * header goes whatever it holds. A `CC` header (a copy put in the ladder with one) stays, and the forwarder's publish
 * routes it.
 */
export function forwardedProperties(properties: MessageProperties, prefix: string): Options.Publish {
  const delivered = withoutDelayDeaths(headersOf(properties), prefix);
  const { [DelayHeader.expiration]: carried, [DelayHeader.cc]: cc, [DelayHeader.bcc]: bcc, ...headers } = delivered;
  const copy = republishProperties(properties, headers); // a new object: set here rather than spread (docs/performance.md)
  copy.mandatory = true;
  try {
    copy.expiration = readExpiration(carried);
  } catch {
    // malformed: delivered without one
  }
  if (Array.isArray(cc)) copy.CC = routingKeys(cc);
  if (Array.isArray(bcc)) copy.BCC = routingKeys(bcc);
  return copy;
}

/** CC or BCC routing keys as amqplib sends them (a list of strings); undefined for none. */
function routingKeys(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const keys = (Array.isArray(value) ? value : [value]).map((key) => (Buffer.isBuffer(key) ? key.toString() : String(key)));
  return keys.length > 0 ? keys : undefined;
}

/**
 * How long the forwarder waits before delivering a message that left the ladder before its due time
 * (DelayHeader.dueAt), in ms; 0 when it is due, or its due time is missing or malformed. The broker expires the
 * ladder's TTLs by its own clock, which runs up to 1 % fast while the Erlang VM corrects its time to the system's: a
 * message of a few seconds can reach the ready queue some milliseconds early. The wait is at most 20 ms plus 2 % of
 * the delay, and 100 ms: messages of a publisher whose clock is ahead of the forwarder's are held that long each, in
 * the forwarder's places (prefetch 100: still a thousand a second).
 */
export function earlyByMs(headers: Readonly<Record<string, unknown>>, nowMs: number): number {
  const due = headers[DelayHeader.dueAt];
  const dueMs = typeof due === 'string' ? Date.parse(due) : NaN;
  if (!(dueMs > nowMs)) return 0;
  const delayMs = headers[DelayHeader.ms];
  const bound = Math.min(100, 20 + (typeof delayMs === 'number' && delayMs > 0 ? delayMs / 50 : 0));
  return Math.ceil(Math.min(dueMs - nowMs, bound));
}

/** The target a due message names in its headers, or undefined if they are missing or malformed. */
export function readDelayTarget(headers: Readonly<Record<string, unknown>> | undefined): DelayTarget | undefined {
  const exchange = headers?.[DelayHeader.targetExchange];
  const routingKey = headers?.[DelayHeader.targetRoutingKey];
  return typeof exchange === 'string' && typeof routingKey === 'string' ? { exchange, routingKey } : undefined;
}

/**
 * Whether a delayed message's target is part of a ladder under the configured `prefix` (the classic one or the quorum
 * one): one of its exchanges, or one of its queues by name through the default exchange. The forwarder would send such a
 * message around the ladder for ever. Other names under the prefix (`billing.invoices` for `billing`) are not.
 * @example isLadderTarget({ exchange: 'amqp-retry.delay.ready', routingKey: '' }, 'amqp-retry.delay') // true
 */
export function isLadderTarget({ exchange, routingKey }: DelayTarget, prefix: string): boolean {
  const name = exchange === '' ? routingKey : exchange;
  if (!name.startsWith(`${prefix}.`)) return false; // most targets: no names to build
  return (['classic', 'quorum'] as const).some((queueType) => {
    const ladder = planDelayTopology(prefix, queueType);
    return (exchange === '' ? ladder.queues : ladder.exchanges).some((declared) => declared.name === name);
  });
}

/** The prefix a ladder was configured with: its own prefix without the quorum ladder's `.quorum` (see delayLadderPrefix). */
export const configuredDelayPrefix = ({ prefix, queueType }: Pick<DelayTopology, 'prefix' | 'queueType'>): string =>
  queueType === 'quorum' ? prefix.slice(0, -'.quorum'.length) : prefix;

/** The sentence of a refusal or a park of a message whose target is part of the ladder (see isLadderTarget). */
export const ladderTargetProblem = ({ exchange, routingKey }: DelayTarget, prefix: string): string =>
  `the target of a delayed message, ${exchange === '' ? `queue "${routingKey}"` : `exchange "${exchange}"`}, is part of the ` +
  `delay ladder "${prefix}": it would be forwarded around the ladder for ever. Name the exchange the message is for`;

/**
 * A due message's headers without the ladder's dead-letter history, for the forwarder to republish. On 3.x the broker
 * silently drops a message dead-lettered into a queue its `x-death` already lists without a rejection since, so a
 * message delayed again with the same digits would vanish (observed on 3.10). Entries of other queues are kept. A
 * quorum ready queue's delivery counts go too: a quorum handler queue would read them as its own.
 */
export function withoutDelayDeaths(headers: Readonly<Record<string, unknown>>, prefix: string = DELAY_LADDER.prefix): Record<string, unknown> {
  const isLadder = (queue: unknown): boolean => typeof queue === 'string' && queue.startsWith(`${prefix}.`);
  const queueOf = (death: unknown): unknown => (typeof death === 'object' && death !== null && 'queue' in death ? death.queue : undefined);
  const result = withoutDeliveryCounts(headers);
  const deaths = headers[BrokerHeader.death];
  if (Array.isArray(deaths)) {
    const kept = deaths.filter((death: unknown) => !isLadder(queueOf(death)));
    if (kept.length > 0) result[BrokerHeader.death] = kept;
    else delete result[BrokerHeader.death];
  }
  for (const which of ['first', 'last'] as const) {
    if (isLadder(headers[`x-${which}-death-queue`])) {
      for (const field of ['queue', 'reason', 'exchange']) delete result[`x-${which}-death-${field}`];
    }
  }
  return result;
}
