import { type DurationTimer, startTimer } from './duration.timer.js';

/** One wait (a send awaiting its confirm, a handler call), as the clock knows it. */
export interface DeadlineWait {
  /** When it started (the global performance.now(): monotonic, as Node's timers, so a clock set back cannot stretch a wait). */
  sentAt: number;
  /** When its current wait ends. */
  due: number;
  /**
   * Runs when the wait ends before `stop()`: true waits another `timeoutMs` (a patient send, told how long it has
   * waited), false ends it.
   */
  onTimeout(waitedMs: number): boolean;
}

/**
 * Deadlines of waits that all last the same `timeoutMs` (the confirms of one channel's sends, the calls of one
 * handler under its time limit), on one timer instead of one per wait. Their deadlines come in the order they
 * started: the waits are kept in a Set (which iterates in insertion order), the timer is armed for the oldest, and
 * when it fires every wait that is due times out, then it is armed again for the next. A wait that goes on (a patient
 * send) goes to the back, due `timeoutMs` later, which is never before any other. Starting and stopping a wait are
 * O(1). The timer is not cancelled when the last wait stops: it runs out and is not armed again (cancelling and
 * arming a Node timer for each of a stream of short waits cost microseconds each, measured: most of a handler time
 * limit's cost). It is unref'd, so an idle clock keeps no process alive; clear() cancels it.
 */
export class DeadlineClock {
  private readonly waits = new Set<DeadlineWait>();
  private timer?: DurationTimer;

  constructor(private readonly timeoutMs: number) {}

  /** How many wait now. */
  get size(): number {
    return this.waits.size;
  }

  /** A new wait, from now, that calls `onTimeout` when it ends before stop(). */
  start(onTimeout: (waitedMs: number) => boolean): DeadlineWait {
    const wait: DeadlineWait = { sentAt: 0, due: 0, onTimeout };
    this.track(wait);
    return wait;
  }

  /** `wait` (an object that is its own wait: no allocation of ours) waits from now; its times are set here. */
  track(wait: DeadlineWait): void {
    const now = performance.now();
    wait.sentAt = now;
    wait.due = now + this.timeoutMs;
    this.waits.add(wait);
    // A timer still running for an earlier wait fires no later than this one is due (every wait lasts timeoutMs).
    this.timer ??= startTimer(this.timeoutMs, () => this.fire()).unref();
  }

  /** The wait ended (a send settled, a call returned): no timeout for it. Safe to call more than once. */
  stop(wait: DeadlineWait): void {
    this.waits.delete(wait);
  }

  /** Ends every wait without a timeout (a channel gone: its sends settle through their own callbacks). */
  clear(): void {
    this.waits.clear();
    this.timer?.cancel();
    this.timer = undefined;
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
