import { reconnectDelay, type ReconnectPolicy } from '../connection/reconnect.policy.js';

/**
 * How long a due delayed message whose exchange this application may not publish to (403 ACCESS_REFUSED) is held
 * before it is given back to the ready queue: long enough that a lone forwarder does not spin, short enough that the
 * application that may deliver it, sharing the ladder, gets it soon (with 30 s, ten took over a minute in the e2e test).
 */
export const REFUSED_HOLD: ReconnectPolicy = { initialDelayMs: 1_000, maxDelayMs: 5_000 };

/** At most one log line per refused exchange in this many milliseconds, with how many were given back meanwhile. */
export const REFUSED_LOG_EVERY_MS = 60_000;

/** Refused exchanges remembered at once: the target exchange comes from a message header, so the map is bounded. */
export const MAX_REFUSED_EXCHANGES = 1_000;

interface Refusal {
  /** Publishes refused in a row (the hold grows with it). */
  refusals: number;
  /** Until then, messages for the exchange are held and given back without trying to publish. */
  retryAt: number;
  /** Given back since the last log line. */
  givenBack: number;
  /** When the last line was logged (undefined: never). */
  loggedAt?: number;
}

/** What the forwarder knows of the exchanges it was refused: when to try again, how long to hold a message, when to log. Pure. */
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
    let refusal = this.byExchange.get(exchange);
    if (!refusal) {
      if (this.byExchange.size >= this.max) this.byExchange.delete(this.byExchange.keys().next().value as string);
      this.byExchange.set(exchange, (refusal = { refusals: 0, retryAt: 0, givenBack: 0 }));
    }
    if (now < refusal.retryAt) return;
    refusal.refusals++;
    refusal.retryAt = now + reconnectDelay(refusal.refusals, this.hold);
  }

  /** A publish to `exchange` went through: it is no longer refused. */
  delivered(exchange: string): void {
    this.byExchange.delete(exchange);
  }

  /** A message for `exchange` is given back: how long to hold it first, and the count to log when a line is due. */
  giveBack(exchange: string, now: number): { holdMs: number; log?: number } {
    const refusal = this.byExchange.get(exchange);
    const holdMs = Math.max(this.hold.initialDelayMs, Math.min((refusal?.retryAt ?? now) - now, this.hold.maxDelayMs));
    if (!refusal) return { holdMs, log: 1 };
    refusal.givenBack++;
    if (refusal.loggedAt !== undefined && now - refusal.loggedAt < this.logEveryMs) return { holdMs };
    const log = refusal.givenBack;
    refusal.givenBack = 0;
    refusal.loggedAt = now;
    return { holdMs, log };
  }
}
