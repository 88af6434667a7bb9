import { BrokerHeader, ParkedHeader } from '../headers/header.names.js';
import { type IdentifiedDelivery, retryIdentity } from './retry.identity.js';
import { readDeathHistory } from './x-death.parser.js';
import { keepNewest } from '../publish/known-targets.js';

/** How many identities a ledger keeps: the least recently returned are forgotten first. */
export const OWN_RETURNS_CAPACITY = 10_000;

/**
 * How long a hand-over note's credit waits for the delivery it is meant for. The returns of a hand-over go back to
 * the head of the queue and reach the next owner as soon as it consumes: a credit older than this belongs to a message
 * that went elsewhere (another instance settled it), and must not let off a later message of the same identity.
 */
export const CREDIT_LIFETIME_MS = 5 * 60_000;

/** A hand-over note's count of one identity, until the next delivery of it here takes it or it expires. */
interface Credit {
  returns: number;
  expiresAt: number;
}

/** How a ledger is sized and reads the time. */
export interface OwnReturnsOptions {
  capacity?: number;
  /** How long a credit waits for its delivery (CREDIT_LIFETIME_MS). */
  creditLifetimeMs?: number;
  now?: () => number;
}

/**
 * The deliveries one handler queue put back on purpose (nack with requeue, while paused or its circuit open; a
 * hand-over's channel close), counted by identity. A quorum queue counts those returns as crashes, so ten pauses would
 * park the message at the head as `redelivery-limit`; the decision subtracts what this ledger holds. In memory: the
 * returns of a hand-over reach the next owner's ledger through its note (hand-over.note.ts, credit); a restart only
 * makes the count stricter.
 *
 * A note's counts are credits, apart from the returns made here: every instance that consumes the queue hears the
 * note, and only the one the message goes to may use it. A credit is taken by the next delivery of its identity here
 * (claim), whatever that delivery's outcome, and expires after CREDIT_LIFETIME_MS; a later note replaces it. So it
 * never stands for more than one hand-over returned, and a message that went elsewhere leaves none behind.
 */
export class OwnReturns {
  private readonly counts = new Map<string, number>();
  /** Credits from hand-over notes, oldest first: they all live as long, so the first to expire is the first. */
  private readonly credits = new Map<string, Credit>();
  /** The identities returned since the last takeUnannounced(), for the hand-over's note. */
  private readonly unannounced = new Set<string>();
  private readonly options: Required<OwnReturnsOptions>;

  constructor({ capacity = OWN_RETURNS_CAPACITY, creditLifetimeMs = CREDIT_LIFETIME_MS, now = Date.now }: OwnReturnsOptions = {}) {
    this.options = { capacity, creditLifetimeMs, now };
  }

  /**
   * Whether nothing was put back and no credit is live: then a delivery's identity is never computed. Drops the
   * expired credits, so that the ledger is empty again (and costs nothing) once a note's credits are through.
   */
  get isEmpty(): boolean {
    if (this.credits.size > 0) this.expireCredits();
    return this.counts.size === 0 && this.credits.size === 0;
  }

  /** One more return of `identity`: a delivery of it, so it takes its live credit first (claim). */
  add(identity: string): void {
    keepNewest(this.counts, identity, this.claim(identity) + 1, this.options.capacity);
    this.unannounced.add(identity);
    if (this.unannounced.size > this.options.capacity) this.unannounced.delete(this.unannounced.values().next().value as string);
  }

  /**
   * Keeps what a hand-over's note says of `identity` (its returns on purpose in all) as a credit for the next delivery
   * of it here, until it expires; a later note's count replaces an earlier one's.
   */
  credit(identity: string, returns: number): void {
    keepNewest(this.credits, identity, { returns, expiresAt: this.options.now() + this.options.creditLifetimeMs }, this.options.capacity);
  }

  /**
   * A delivery of `identity` here: takes its live credit, which then counts as returns this ledger holds (the note's
   * count includes those made here when the message went back and forth, so the larger stands), and gives its count.
   */
  claim(identity: string): number {
    const credit = this.credits.get(identity);
    if (credit === undefined) return this.of(identity);
    this.credits.delete(identity);
    const own = this.of(identity);
    if (credit.expiresAt <= this.options.now() || credit.returns <= own) return own;
    keepNewest(this.counts, identity, credit.returns, this.options.capacity);
    return credit.returns;
  }

  /** The identities returned since the last call, each with its count: what a hand-over's note names. */
  takeUnannounced(): Array<[identity: string, returns: number]> {
    const taken = [...this.unannounced].map((identity): [string, number] => [identity, this.of(identity)]);
    this.unannounced.clear();
    return taken.filter(([, returns]) => returns > 0);
  }

  /** The returns of `identity` this process made or claimed (0 when none, or forgotten); a credit not claimed is not. */
  of(identity: string): number {
    return this.counts.get(identity) ?? 0;
  }

  /**
   * Forgets `identity`: its message left the queue (acked, moved to a tier, parked), so a later copy with the same
   * identity (a replay) starts from none. Until then its count stands, as the broker's own count does.
   */
  forget(identity: string): void {
    this.counts.delete(identity);
    this.credits.delete(identity);
    this.unannounced.delete(identity);
  }

  private expireCredits(): void {
    const now = this.options.now();
    for (const [identity, credit] of this.credits) {
      if (credit.expiresAt > now) return;
      this.credits.delete(identity);
    }
  }
}

/**
 * The identity a delivery of `queue` is counted under (retryIdentity); a malformed death history reads as none. A
 * replayed copy (ParkedHeader.replayedAt) is counted apart from the message it copies, under its replay's time: a
 * replay starts from no returns, whatever a ledger holds of the original.
 */
export function returnIdentity(message: IdentifiedDelivery, queue: string): string {
  const headers = message.properties.headers;
  const history = readDeathHistory(headers?.[BrokerHeader.death]);
  const identity = retryIdentity(message, history.ok ? history.deaths : [], queue);
  const replayedAt: unknown = headers?.[ParkedHeader.replayedAt];
  return replayedAt === undefined || replayedAt === null ? identity : `${identity}@replayed:${String(replayedAt)}`;
}
