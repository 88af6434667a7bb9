import type { DeliveryFailedEvent, DeliveryHandledEvent, MessageParkedEvent, RetryObserver } from './retry.observer.js';

/** Messages one queue has seen settled since counting began, by outcome. */
export interface ActivityCounts {
  /** Handled: the handler returned and the message was acked. */
  handled: number;
  /** Retried: the handler threw and the message went to a tier. */
  retried: number;
  /** Parked: a copy confirmed in the parking queue (exhausted, non-retryable, malformed, undeliverable...). */
  parked: number;
}

/**
 * Counts handled, retried and parked messages per queue, for the page's rates (it samples the counts and charts the
 * differences). Keys are the engine's own queues (its handlers' and its delay ladder's ready queue): bounded.
 */
export class ActivityCounter implements RetryObserver {
  private readonly counts = new Map<string, ActivityCounts>();

  handled(event: DeliveryHandledEvent): void {
    this.of(event.queue).handled++;
  }

  failed(event: DeliveryFailedEvent): void {
    if (event.retryTier !== undefined) this.of(event.queue).retried++;
  }

  parked(event: MessageParkedEvent): void {
    this.of(event.queue).parked++;
  }

  /** A copy of the counts of `queue` (zeros when it saw nothing yet). */
  countsOf(queue: string): ActivityCounts {
    return { ...(this.counts.get(queue) ?? { handled: 0, retried: 0, parked: 0 }) };
  }

  private of(queue: string): ActivityCounts {
    let counts = this.counts.get(queue);
    if (!counts) this.counts.set(queue, (counts = { handled: 0, retried: 0, parked: 0 }));
    return counts;
  }
}
