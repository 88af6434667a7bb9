import type { Options } from 'amqplib';
import { reconnectDelay, type ReconnectPolicy } from '../connection/reconnect.policy.js';
import { DelayHeader } from '../headers/header.names.js';
import { assertLadderHeaders, ladderProperties, planDelayedPublish, type DelayHeaders, type DelayTarget } from './delay.plan.js';
import { readStrictInteger } from './x-death.parser.js';
import { keepNewest } from '../publish/known-targets.js';

/**
 * How long after a 403 a forwarder gives the due messages for that exchange back without trying to publish them: 1 s,
 * doubling to 5 s per round of tries. A full queue is tried each time: it may take the next message, and a message it
 * refuses waits longer each time (giveBackDelay).
 */
export const REFUSED_HOLD: ReconnectPolicy = { initialDelayMs: 1_000, maxDelayMs: 5_000 };

/** The longest wait of a given-back message: 2^18 ms, about 4.4 min (a full queue, any refusal but a 403). */
export const GIVE_BACK_MAX_MS = 2 ** 18;

/** The longest wait of a message given back after a 403: 2^16 ms, about 65 s. */
export const FORBIDDEN_GIVE_BACK_MAX_MS = 2 ** 16;

/**
 * How long a due message its target refused waits in the ladder before a forwarder tries it again, by its count of
 * give-backs (1 the first time): 1,024 ms, doubling to GIVE_BACK_MAX_MS. After a 403 it doubles every second
 * give-back, to FORBIDDEN_GIVE_BACK_MAX_MS: another application sharing the ladder may deliver it, and one that takes
 * it half the time gets it within seconds. Each wait is a power of two milliseconds (one digit in base 8, one level)
 * plus a random part of up to 7/8 of the digit below it (one level more): messages refused together do not come back
 * together, a burst a full queue would refuse again. So N messages a target keeps refusing cost, once each waits the
 * longest, at most N / 262 give-backs a second (N / 65 after a 403), each a publish, at most two dead-letterings and a
 * delivery to a forwarder, plus the try of a full target.
 */
export function giveBackDelay(count: number, forbidden: boolean, random: () => number = Math.random): number {
  const exponent = forbidden ? Math.ceil(count / 2) : count;
  const ms = Math.min(2 ** (9 + Math.max(exponent, 1)), forbidden ? FORBIDDEN_GIVE_BACK_MAX_MS : GIVE_BACK_MAX_MS);
  const below = 8 ** (Math.floor(Math.log2(ms) / 3) - 1); // the unit of the base-8 digit below the one of ms
  return ms + Math.min(Math.floor(random() * 8), 7) * below;
}

/** A due message given back to the ladder: where to publish it, with what, and when it is due again. */
export interface GiveBack extends DelayTarget {
  readonly properties: Options.Publish;
  readonly delayMs: number;
}

/**
 * How to give a due message that its target refused back to the ladder under `prefix`, rather than hold it (a forwarder
 * holding refused messages stalls every other message behind them): delayed by giveBackDelay (`forbidden`: refused
 * with a 403; `random` spreads it), its count of give-backs one more, its target, and the delay and due time its publisher asked for, kept.
 * `forwarded` holds the properties it would have been delivered with. Throws a TypeError for an x-death the ladder
 * must not carry (see assertLadderHeaders).
 */
export function planGiveBack(
  forwarded: Options.Publish,
  target: DelayTarget,
  nowMs: number,
  prefix: string,
  forbidden = false,
  random: () => number = Math.random,
): GiveBack {
  const headers = forwarded.headers ?? {};
  assertLadderHeaders(headers);
  const count = Math.max(readStrictInteger(headers[DelayHeader.givenBack]) ?? 0, 0) + 1;
  const delayMs = giveBackDelay(count, forbidden, random);
  const plan = planDelayedPublish(delayMs, target, nowMs, prefix);
  if (plan.kind !== 'ladder') throw new RangeError(`A give-back delay of ${delayMs} ms`); // never: the delay is 1 s at least
  const { [DelayHeader.ms]: ms, [DelayHeader.dueAt]: dueAt } = headers;
  const delay: DelayHeaders = {
    ...plan.headers,
    [DelayHeader.ms]: typeof ms === 'number' ? ms : plan.headers[DelayHeader.ms],
    [DelayHeader.dueAt]: typeof dueAt === 'string' ? dueAt : plan.headers[DelayHeader.dueAt],
  };
  const properties = ladderProperties({ ...forwarded, headers: { ...headers, [DelayHeader.givenBack]: count } }, delay);
  return { exchange: plan.exchange, routingKey: plan.routingKey, properties, delayMs };
}

/** At most one log line per refused exchange in this many milliseconds, with how many were given back meanwhile. */
export const REFUSED_LOG_EVERY_MS = 60_000;

/** Refused exchanges remembered at once: the target exchange comes from a message header, so the map is bounded. */
export const MAX_REFUSED_EXCHANGES = 1_000;

interface Refusal {
  /** Publishes refused in a row (the hold grows with it). */
  refusals: number;
  /** Until then, messages for the exchange are given back without trying to publish. */
  retryAt: number;
  /** Given back since the last log line. */
  givenBack: number;
  /** When the last line was logged (undefined: never). */
  loggedAt?: number;
}

/** What the forwarder knows of the exchanges that refused it: when to try again, when to log. Pure. */
export class RefusedTargets {
  private readonly byExchange = new Map<string, Refusal>();

  constructor(
    private readonly hold: ReconnectPolicy = REFUSED_HOLD,
    private readonly logEveryMs = REFUSED_LOG_EVERY_MS,
    private readonly max = MAX_REFUSED_EXCHANGES,
  ) {}

  /** True while a refused exchange's next try is not due: the message is given back without a publish. */
  isHeld(exchange: string, now: number): boolean {
    const refusal = this.byExchange.get(exchange);
    return refusal !== undefined && now < refusal.retryAt;
  }

  /** A publish to `exchange` was refused (403): the next try waits longer. The hold grows per round of tries, not per message. */
  refused(exchange: string, now: number): void {
    const refusal = this.entry(exchange);
    if (now < refusal.retryAt) return;
    refusal.refusals++;
    refusal.retryAt = now + reconnectDelay(refusal.refusals, this.hold);
  }

  private entry(exchange: string): Refusal {
    let refusal = this.byExchange.get(exchange);
    if (!refusal) keepNewest(this.byExchange, exchange, (refusal = { refusals: 0, retryAt: 0, givenBack: 0 }), this.max);
    return refusal;
  }

  /** A publish to `exchange` went through: it is no longer refused. */
  delivered(exchange: string): void {
    this.byExchange.delete(exchange);
  }

  /**
   * A message for `exchange` is given back: the count to log when a line is due, one line a while per exchange (a
   * publish that goes through starts the count again).
   */
  giveBack(exchange: string, now: number): { log?: number } {
    const refusal = this.entry(exchange);
    refusal.givenBack++;
    if (refusal.loggedAt !== undefined && now - refusal.loggedAt < this.logEveryMs) return {};
    const log = refusal.givenBack;
    refusal.givenBack = 0;
    refusal.loggedAt = now;
    return { log };
  }
}
