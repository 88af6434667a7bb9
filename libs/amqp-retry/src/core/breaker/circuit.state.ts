import { formatDuration } from '../time/duration.reader.js';
import type { CircuitBreakerConfig } from './breaker.config.js';
import type { CircuitState } from './queue.state.js';

export type { CircuitState } from './queue.state.js';

/** A change of state, with the reason in words (for the log line and observers). */
export interface CircuitTransition {
  from: CircuitState;
  to: CircuitState;
  reason: string;
  /** When it opened: for how long. */
  openForMs?: number;
}

/** A delivery let through by `admit()`; the outcome of a ticket from an earlier state changes nothing. */
export interface CircuitTicket {
  readonly epoch: number;
  readonly trial: boolean;
  settled: boolean;
}

/** The window is kept as this many buckets: memory stays constant at any rate, the window slides in steps of a tenth. */
const BUCKETS = 10;

const trialCalls = (count: number) => `${count} trial ${count === 1 ? 'call' : 'calls'}`;

interface Bucket {
  start: number;
  failures: number;
  successes: number;
}

/**
 * A circuit breaker's state machine, pure: the caller passes the time, runs the timers, and stops or starts the
 * consumer on each transition it returns.
 *
 * Closed -> open: `failureRate` of at least `minimumCalls` counted calls in `window` failed, or `consecutiveFailures`
 * in a row. Open -> half-open: the caller's timer (`openForMs`). Half-open -> closed: `halfOpenCalls` trials all
 * succeeded. Half-open -> open: a first attempt's trial failed, or `consecutiveFailures` retried trials in a row; the
 * open time doubles, up to `maxOpenFor`.
 *
 * A bad message fails every time, so a retried message's failure says nothing about the dependency: while closed it
 * is not counted, while half-open it frees its trial place. A poison backlog then goes through its tiers instead of
 * holding the circuit open, and first attempts still find a dependency that is down.
 *
 * Not cockatiel's CircuitBreakerPolicy: it leaves the open state lazily on the next call (an open queue here gets
 * none), lets one trial through, counts a minimum rate, reads Date.now(), and admits and records in one `execute()`.
 */
export class CircuitBreakerState {
  private current: CircuitState = 'closed';
  private epoch = 0;
  private readonly buckets: Bucket[] = [];
  private consecutive = 0;
  /** The open time of the next opening: doubles after a failed trial, back to openFor once closed. */
  private nextOpenForMs: number;
  private trialsAdmitted = 0;
  private trialsSucceeded = 0;
  /** Trials of retried messages failed in a row while half-open. */
  private trialsFailedAgain = 0;

  constructor(private readonly config: CircuitBreakerConfig) {
    this.nextOpenForMs = config.openForMs;
  }

  get state(): CircuitState {
    return this.current;
  }

  /** A delivery may reach the handler: always while closed, the first `halfOpenCalls` while half-open, never while open. */
  admit(): CircuitTicket | undefined {
    const trial = this.current === 'half-open';
    if (this.current === 'open' || (trial && this.trialsAdmitted >= this.config.halfOpenCalls)) return undefined;
    if (trial) this.trialsAdmitted++;
    return { epoch: this.epoch, trial, settled: false };
  }

  /** An admitted delivery ended without a counted outcome (parked unread, a non-retryable error): its trial place is free. */
  release(ticket: CircuitTicket): void {
    if (ticket.settled) return;
    ticket.settled = true;
    if (ticket.trial && ticket.epoch === this.epoch && this.current === 'half-open') this.trialsAdmitted--;
  }

  /** The counted outcome of an admitted delivery's call on its `attempt` (1-based); returns the transition it caused, if any. */
  record(ticket: CircuitTicket, failed: boolean, now: number, attempt = 1): CircuitTransition | undefined {
    if (ticket.settled) return undefined;
    ticket.settled = true;
    if (ticket.epoch !== this.epoch) return undefined;
    const again = failed && attempt > 1; // a message's repeated failure (see the class's comment)
    if (this.current === 'half-open') {
      if (!failed) return this.trialSucceeded();
      if (!again) return this.open('a trial call failed');
      this.trialsAdmitted--; // its place goes to another message
      if (++this.trialsFailedAgain < this.config.consecutiveFailures) return undefined;
      return this.open(`${this.trialsFailedAgain} trial calls of retried messages failed in a row`);
    }
    if (this.current !== 'closed' || again) return undefined;
    const bucket = this.bucketAt(now);
    if (!failed) {
      bucket.successes++;
      this.consecutive = 0;
      return undefined;
    }
    bucket.failures++;
    this.consecutive++;
    if (this.consecutive >= this.config.consecutiveFailures) return this.open(`${this.consecutive} calls in a row failed`);
    const { failures, calls } = this.counts(now);
    if (calls >= this.config.minimumCalls && failures >= this.config.failureRate * calls) {
      const rate = Math.round((100 * failures) / calls);
      return this.open(`${failures} of ${calls} calls in the last ${formatDuration(this.config.windowMs)} failed (${rate}%)`);
    }
    return undefined;
  }

  /** The open time is over (the caller's timer): trial deliveries may come. */
  halfOpen(): CircuitTransition | undefined {
    if (this.current !== 'open') return undefined;
    this.current = 'half-open';
    this.epoch++;
    this.trialsAdmitted = 0;
    this.trialsSucceeded = 0;
    this.trialsFailedAgain = 0;
    return { from: 'open', to: 'half-open', reason: `letting ${trialCalls(this.config.halfOpenCalls)} through` };
  }

  /** Failures and calls counted in the window ending at `now`. */
  counts(now: number): { failures: number; calls: number } {
    const live = this.buckets.filter((bucket) => bucket.start > now - this.config.windowMs);
    const failures = live.reduce((sum, bucket) => sum + bucket.failures, 0);
    return { failures, calls: live.reduce((sum, bucket) => sum + bucket.failures + bucket.successes, 0) };
  }

  private trialSucceeded(): CircuitTransition | undefined {
    this.trialsFailedAgain = 0;
    if (++this.trialsSucceeded < this.config.halfOpenCalls) return undefined;
    this.current = 'closed';
    this.epoch++;
    this.buckets.length = 0;
    this.consecutive = 0;
    this.nextOpenForMs = this.config.openForMs;
    return { from: 'half-open', to: 'closed', reason: `${trialCalls(this.config.halfOpenCalls)} succeeded` };
  }

  private open(why: string): CircuitTransition {
    const from = this.current;
    const openForMs = this.nextOpenForMs;
    this.nextOpenForMs = Math.min(this.config.maxOpenForMs, openForMs * 2);
    this.current = 'open';
    this.epoch++;
    this.consecutive = 0;
    this.buckets.length = 0;
    return { from, to: 'open', reason: `${why}; open for ${formatDuration(openForMs)}`, openForMs };
  }

  /** The bucket `now` falls in, started if new; buckets that left the window are dropped. */
  private bucketAt(now: number): Bucket {
    const size = Math.max(1, Math.ceil(this.config.windowMs / BUCKETS));
    const start = now - (now % size);
    const last = this.buckets[this.buckets.length - 1];
    if (last !== undefined && last.start === start) return last;
    while (this.buckets.length > 0 && this.buckets[0].start <= now - this.config.windowMs) this.buckets.shift();
    // A clock that went back: count in the newest bucket rather than out of order.
    if (last !== undefined && last.start > start) return last;
    const bucket = { start, failures: 0, successes: 0 };
    this.buckets.push(bucket);
    if (this.buckets.length > BUCKETS + 1) this.buckets.shift();
    return bucket;
  }
}
