import { BrokerHeader } from '../headers/header.names.js';
import { type IdentifiedDelivery, retryIdentity } from './retry.identity.js';
import { readDeathHistory } from './x-death.parser.js';

/** How many identities a ledger keeps: the least recently returned are forgotten first. */
export const OWN_RETURNS_CAPACITY = 10_000;

/**
 * The deliveries one handler queue put back on purpose (nack with requeue, while paused or its circuit open), counted
 * by identity. A quorum queue counts those returns as crashes, so ten pauses would park the message at the head as
 * `redelivery-limit`; the decision subtracts what this ledger holds. In memory: a restart only makes the count stricter.
 */
export class OwnReturns {
  private readonly counts = new Map<string, number>();

  constructor(private readonly capacity = OWN_RETURNS_CAPACITY) {}

  /** Whether anything was put back: while nothing was, a delivery's identity is never computed. */
  get isEmpty(): boolean {
    return this.counts.size === 0;
  }

  /** One more return of `identity`. */
  add(identity: string): void {
    const count = (this.counts.get(identity) ?? 0) + 1;
    this.counts.delete(identity); // to the back: the most recently returned are kept longest
    this.counts.set(identity, count);
    if (this.counts.size > this.capacity) this.counts.delete(this.counts.keys().next().value as string);
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
  }
}

/** The identity a delivery of `queue` is counted under (retryIdentity); a malformed death history reads as none. */
export function returnIdentity(message: IdentifiedDelivery, queue: string): string {
  const history = readDeathHistory(message.properties.headers?.[BrokerHeader.death]);
  return retryIdentity(message, history.ok ? history.deaths : [], queue);
}
