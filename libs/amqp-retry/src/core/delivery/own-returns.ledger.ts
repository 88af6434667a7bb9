import { BrokerHeader } from '../headers/header.names.js';
import { type IdentifiedDelivery, retryIdentity } from './retry.identity.js';
import { readDeathHistory } from './x-death.parser.js';

/** How many identities a ledger keeps: the least recently returned are forgotten first. */
export const OWN_RETURNS_CAPACITY = 10_000;

/**
 * The deliveries one handler queue put back on purpose (nack with requeue, while paused or its circuit open; a
 * hand-over's channel close), counted by identity. A quorum queue counts those returns as crashes, so ten pauses would
 * park the message at the head as `redelivery-limit`; the decision subtracts what this ledger holds. In memory: the
 * returns of a hand-over reach the next owner's ledger through its note (hand-over.note.ts, credit); a restart only
 * makes the count stricter.
 */
export class OwnReturns {
  private readonly counts = new Map<string, number>();
  /** The identities returned since the last takeUnannounced(), for the hand-over's note. */
  private readonly unannounced = new Set<string>();

  constructor(private readonly capacity = OWN_RETURNS_CAPACITY) {}

  /** Whether anything was put back: while nothing was, a delivery's identity is never computed. */
  get isEmpty(): boolean {
    return this.counts.size === 0;
  }

  /** One more return of `identity`. */
  add(identity: string): void {
    const count = (this.counts.get(identity) ?? 0) + 1;
    this.keep(identity, count);
    this.unannounced.add(identity);
    if (this.unannounced.size > this.capacity) this.unannounced.delete(this.unannounced.values().next().value as string);
  }

  /**
   * Takes what another process noted of `identity` (its hand-over's note): its returns on purpose in all, which
   * include those this ledger holds when the message went back and forth, so the larger of the two stands.
   */
  credit(identity: string, returns: number): void {
    if (returns > this.of(identity)) this.keep(identity, returns);
  }

  /** The identities returned since the last call, each with its count: what a hand-over's note names. */
  takeUnannounced(): Array<[identity: string, returns: number]> {
    const taken = [...this.unannounced].map((identity): [string, number] => [identity, this.of(identity)]);
    this.unannounced.clear();
    return taken.filter(([, returns]) => returns > 0);
  }

  /** The returns of `identity` this process made (0 when it made none, or forgot). */
  of(identity: string): number {
    return this.counts.get(identity) ?? 0;
  }

  /**
   * Forgets `identity`: its message left the queue (acked, moved to a tier, parked), so a later copy with the same
   * identity (a replay) starts from none. Until then its count stands, as the broker's own count does.
   */
  forget(identity: string): void {
    this.counts.delete(identity);
    this.unannounced.delete(identity);
  }

  private keep(identity: string, count: number): void {
    this.counts.delete(identity); // to the back: the most recently returned are kept longest
    this.counts.set(identity, count);
    if (this.counts.size > this.capacity) this.counts.delete(this.counts.keys().next().value as string);
  }
}

/** The identity a delivery of `queue` is counted under (retryIdentity); a malformed death history reads as none. */
export function returnIdentity(message: IdentifiedDelivery, queue: string): string {
  const history = readDeathHistory(message.properties.headers?.[BrokerHeader.death]);
  return retryIdentity(message, history.ok ? history.deaths : [], queue);
}
