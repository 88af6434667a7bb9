import type { Options } from 'amqplib';
import { reconnectDelay, type ReconnectPolicy } from '../connection/reconnect.policy.js';
import { DelayHeader } from '../headers/header.names.js';
import { assertLadderHeaders, ladderProperties, planDelayedPublish, type DelayHeaders, type DelayTarget } from './delay.plan.js';
import { readStrictInteger } from './x-death.parser.js';

/**
 * How long after a refusal (403 ACCESS_REFUSED) a forwarder gives a due message for that exchange back without trying
 * to publish it, and how long such a message waits in the ladder before it is due again: long enough that a lone
 * forwarder does not spin, short enough that the application that may deliver it, sharing the ladder, gets it soon
 * (with 30 s, ten took over a minute in the e2e test).
 */
export const REFUSED_HOLD: ReconnectPolicy = { initialDelayMs: 1_000, maxDelayMs: 5_000 };

/**
 * How long a due message its target refused otherwise (a full queue that rejects publishes) waits in the ladder before
 * a forwarder tries it again, by its own count of give-backs: 1 s, doubling to 30 s, so that a target refusing
 * thousands costs the broker few publishes a second.
 */
export const GIVE_BACK_DELAY: ReconnectPolicy = { initialDelayMs: 1_000, maxDelayMs: 30_000 };

/** A due message given back to the ladder: where to publish it, with what, and when it is due again. */
export interface GiveBack {
  readonly exchange: string;
  readonly routingKey: string;
  readonly properties: Options.Publish;
  readonly delayMs: number;
}

/**
 * How to give a due message that its target refused back to the ladder under `prefix`, rather than hold it (a forwarder
 * holding refused messages stalls every other message behind them): delayed by `policy`, its count of
 * give-backs one more, its target, and the delay and due time its publisher asked for, kept. `forwarded` holds the
 * properties it would have been delivered with. Throws a TypeError for an x-death the ladder must not carry.
 */
export function planGiveBack(
  forwarded: Options.Publish,
  target: DelayTarget,
  nowMs: number,
  prefix: string,
  policy: ReconnectPolicy = GIVE_BACK_DELAY,
  random = Math.random,
): GiveBack {
  const headers = forwarded.headers ?? {};
  assertLadderHeaders(headers);
  const count = Math.max(readStrictInteger(headers[DelayHeader.givenBack]) ?? 0, 0) + 1;
  const delayMs = reconnectDelay(count, policy, random);
  const plan = planDelayedPublish(delayMs, target, nowMs, prefix);
  if (plan.kind !== 'ladder') throw new RangeError(`A give-back delay of ${delayMs} ms`); // never: the delay is 800 ms at least
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

  /** A publish to `exchange` was refused: the next try waits longer. The hold grows per round of tries, not per message. */
  refused(exchange: string, now: number): void {
    const refusal = this.entry(exchange);
    if (now < refusal.retryAt) return;
    refusal.refusals++;
    refusal.retryAt = now + reconnectDelay(refusal.refusals, this.hold);
  }

  private entry(exchange: string): Refusal {
    let refusal = this.byExchange.get(exchange);
    if (!refusal) {
      if (this.byExchange.size >= this.max) this.byExchange.delete(this.byExchange.keys().next().value as string);
      this.byExchange.set(exchange, (refusal = { refusals: 0, retryAt: 0, givenBack: 0 }));
    }
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
