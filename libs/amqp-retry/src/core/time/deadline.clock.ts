import { type DurationTimer, startTimer } from './duration.timer.js';

/** One wait (a send awaiting its confirm, a handler call), as the clock knows it. */
export interface DeadlineWait {
  /** When it started (the global performance.now(): monotonic, as Node's timers, so a clock set back cannot stretch a wait). */
  sentAt: number;
  /** When its current wait ends. */
  due: number;
  /** Runs when the wait ends before `stop()`: true waits another `timeoutMs` (a patient send), false ends it. */
  onTimeout(waitedMs: number): boolean;
}

/**
 * Deadlines of waits that all last the same `timeoutMs` (one channel's confirms, one handler's calls under its time
 * limit), on one timer: as every wait lasts the same, a Set in insertion order is in deadline order, and the timer is
 * armed for the oldest. Starting and stopping a wait are O(1). The timer is not cancelled when the last wait stops
 * (cancelling and arming one per short wait cost microseconds, measured: most of a handler time limit's cost); it is
 * unref'd, so an idle clock keeps no process alive.
 */
export class DeadlineClock<W extends DeadlineWait = DeadlineWait> {
  private readonly waits = new Set<W>();
  private timer?: DurationTimer;

  constructor(private readonly timeoutMs: number) {}

  /** How many wait now. */
  get size(): number {
    return this.waits.size;
  }

  /** A new wait, from now, that calls `onTimeout` when it ends before stop(). */
  start(this: DeadlineClock, onTimeout: (waitedMs: number) => boolean): DeadlineWait {
    const wait: DeadlineWait = { sentAt: 0, due: 0, onTimeout };
    this.track(wait);
    return wait;
  }

  /** `wait` (an object that is its own wait: no allocation of ours) waits from now; its times are set here. */
  track(wait: W): void {
    const now = performance.now();
    wait.sentAt = now;
    wait.due = now + this.timeoutMs;
    this.waits.add(wait);
    // A timer still running for an earlier wait fires no later than this one is due (every wait lasts timeoutMs).
    this.timer ??= startTimer(this.timeoutMs, () => this.fire()).unref();
  }

  /** The wait ended (a send settled, a call returned): no timeout for it. Safe to call more than once. */
  stop(wait: W): void {
    this.waits.delete(wait);
  }

  /** The waits now, oldest first: a copy, so that the caller may stop them as it goes. */
  waiting(): W[] {
    return [...this.waits];
  }

  private fire(): void {
    this.timer = undefined;
    const now = performance.now();
    for (const wait of this.waits) {
      if (wait.due > now) break; // this one and all after it are due later
      this.waits.delete(wait);
      if (wait.onTimeout(now - wait.sentAt)) {
        wait.due = now + this.timeoutMs;
        this.waits.add(wait); // visited again by this loop, and then not due: the loop stops there
      }
    }
    const [next] = this.waits;
    (this.timer as DurationTimer | undefined)?.cancel(); // armed by a start() from a timeout's callback: the oldest wait decides
    this.timer = next ? startTimer(Math.max(0, next.due - now), () => this.fire()).unref() : undefined;
  }
}
