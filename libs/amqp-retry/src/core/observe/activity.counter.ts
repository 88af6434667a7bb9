import type { DeliveryCounter } from './observer.hub.js';
import type { MessageParkedEvent, RetryObserver } from './retry.observer.js';

/** Messages one queue has seen settled since counting began, by outcome. */
export interface ActivityCounts {
  /** Handled: the handler returned and the message was acked. */
  handled: number;
  /** Retried: the handler threw and the message went to a tier. */
  retried: number;
  /** Parked: a copy confirmed in the parking queue (exhausted, non-retryable, malformed, undeliverable...). */
  parked: number;
}

/** Counts handled, retried and parked messages per engine queue (bounded), for the page's rates. */
export class ActivityCounter implements RetryObserver, DeliveryCounter {
  private readonly counts = new Map<string, ActivityCounts>();

  countHandled(queue: string): void {
    this.of(queue).handled++;
  }

  countFailed(queue: string, _durationMs: number, _error: unknown, retried: boolean): void {
    if (retried) this.of(queue).retried++;
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
