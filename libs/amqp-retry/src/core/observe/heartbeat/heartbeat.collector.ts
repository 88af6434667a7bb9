import type { ConsumeMessage } from 'amqplib';
import type { MessageParkedEvent, QueueStateEvent, RetryObserver } from '../retry.observer.js';
import type { DeliveryCounter } from '../observer.hub.js';
import type { BreakerCause, QueueBeatCounts } from './heartbeat.types.js';
import { errorMessage } from '../../text/error-message.format.js';
import { maskCredentials } from '../../text/credentials.mask.js';
import { LATENCY_BUCKETS, latencyBucket } from './latency.histogram.js';
import { publishedAt } from '../../message/message.properties.js';

/** One queue's counts since the previous beat. Made once per queue, then only incremented and reset. */
class QueueCounts {
  handled = 0;
  retried = 0;
  parked = 0;
  failed = 0;
  readonly processing = new Uint32Array(LATENCY_BUCKETS);
  readonly critical = new Uint32Array(LATENCY_BUCKETS);
  /** The last error the handler threw (a reference to it: no copy), named when the breaker opens. */
  lastError: unknown = undefined;
}

/**
 * Collects what each heartbeat carries, per engine queue (bounded): messages handled, retried, parked and failed,
 * histograms of processing and critical time, and why an open breaker opened. Nothing is allocated per message.
 */
export class HeartbeatCollector implements RetryObserver, DeliveryCounter {
  private readonly counts = new Map<string, QueueCounts>();
  private readonly causes = new Map<string, BreakerCause>();

  constructor(private readonly now: () => number = Date.now) {}

  countHandled(queue: string, durationMs: number, message: ConsumeMessage): void {
    const counts = this.of(queue);
    counts.handled++;
    counts.processing[latencyBucket(durationMs)]++;
    const sent = publishedAt(message.properties.timestamp);
    if (sent !== undefined) counts.critical[latencyBucket(Math.max(0, this.now() - sent))]++;
  }

  countFailed(queue: string, durationMs: number, error: unknown, retried: boolean): void {
    const counts = this.of(queue);
    counts.failed++;
    counts.lastError = error;
    counts.processing[latencyBucket(durationMs)]++;
    if (retried) counts.retried++;
  }

  /** Calls side by side can open the circuit before any failure reaches countFailed: the cause names this error. */
  outageCounted(queue: string, error: unknown): void {
    this.of(queue).lastError = error;
  }

  parked(event: MessageParkedEvent): void {
    this.of(event.queue).parked++;
  }

  queueStateChanged(event: QueueStateEvent): void {
    if (event.to === 'open') {
      const previous = this.causes.get(event.queue);
      // A failed trial (half-open to open) keeps the first opening's cause and counts the trial.
      if (previous && event.from === 'half-open') previous.failedTrials++;
      else if (event.from !== 'paused' || !previous) {
        const error = this.counts.get(event.queue)?.lastError;
        const text = error === undefined ? '' : maskCredentials(errorMessage(error)).slice(0, 200);
        this.causes.set(event.queue, { reason: event.reason.slice(0, 200), error: text, openedAt: this.now(), failedTrials: 0 });
      }
    } else if (event.to === 'running') {
      this.causes.delete(event.queue);
    }
  }

  /** Why `queue`'s breaker is open, with `nextTrialAt` (epoch ms) when known; undefined when it is not open. */
  causeOf(queue: string, nextTrialAt?: number): BreakerCause | undefined {
    const cause = this.causes.get(queue);
    if (!cause) return undefined;
    return nextTrialAt === undefined ? { ...cause } : { ...cause, nextTrialAt };
  }

  /** The counts of `queue` since the previous drain, then zero. Called once per beat per queue. */
  drain(queue: string): QueueBeatCounts {
    const counts = this.counts.get(queue) ?? new QueueCounts();
    const { handled, retried, parked, failed } = counts;
    const taken = { handled, retried, parked, failed, processing: Array.from(counts.processing), critical: Array.from(counts.critical) };
    counts.handled = counts.retried = counts.parked = counts.failed = 0;
    counts.processing.fill(0);
    counts.critical.fill(0);
    return taken;
  }

  private of(queue: string): QueueCounts {
    let counts = this.counts.get(queue);
    if (!counts) this.counts.set(queue, (counts = new QueueCounts()));
    return counts;
  }
}
