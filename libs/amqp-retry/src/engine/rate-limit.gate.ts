import type { RateLimitConfig } from '../core/breaker/breaker.config.js';
import { TokenBucket } from '../core/breaker/token.bucket.js';
import { type DurationTimer, startTimer } from '../core/time/duration.timer.js';

/** A waiter's turn: it may call; it is gone (its channel, or the gate closed); or the queue stopped meanwhile. */
export type Turn = 'go' | 'gone' | 'interrupted';

interface Waiter {
  resolve: (turn: Turn) => void;
  signal: AbortSignal;
  onAbort: () => void;
}

/**
 * A handler's rate limit: deliveries over it wait here, unacked (so within `prefetch`), in arrival order, behind one
 * timer for the first of them: no polling, no hot loop.
 */
export class RateLimitGate {
  private readonly bucket: TokenBucket;
  private readonly waiting: Waiter[] = [];
  private timer?: DurationTimer;
  private closed = false;

  constructor(
    config: RateLimitConfig,
    private readonly now: () => number = Date.now,
  ) {
    this.bucket = new TokenBucket(config, now());
  }

  /** How many deliveries wait for their turn. */
  get waiters(): number {
    return this.waiting.length;
  }

  /** Resolves 'go' when the call may go; 'gone' if `signal` aborted or the gate closed; 'interrupted' by interrupt(). */
  wait(signal: AbortSignal): Promise<Turn> {
    if (this.closed || signal.aborted) return Promise.resolve('gone');
    if (this.waiting.length === 0 && this.bucket.take(this.now()) === 0) return Promise.resolve('go');
    return new Promise((resolve) => {
      const waiter: Waiter = {
        resolve,
        signal,
        onAbort: () => {
          const at = this.waiting.indexOf(waiter);
          if (at >= 0) this.waiting.splice(at, 1);
          resolve('gone');
        },
      };
      signal.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiting.push(waiter);
      this.timer ??= startTimer(0, this.pump); // the pump takes the tokens; a wait of 0 runs it on the next turn
    });
  }

  /** Lets no one through any more: the waiting deliveries are let go unhandled (their channel closes next). */
  close(): void {
    this.closed = true;
    this.interrupt('gone');
  }

  /** Every waiter leaves at once without a turn: the queue was paused or its circuit opened, so they go back to the broker. */
  interrupt(turn: Exclude<Turn, 'go'> = 'interrupted'): void {
    this.timer?.cancel();
    this.timer = undefined;
    for (const waiter of this.waiting.splice(0)) this.leave(waiter, turn);
  }

  /** The timer fired: as many waiters go as there are tokens, then the timer waits for the next token. */
  private readonly pump = (): void => {
    this.timer = undefined;
    while (this.waiting.length > 0) {
      const wait = this.bucket.take(this.now());
      if (wait > 0) {
        this.timer = startTimer(wait, this.pump);
        return;
      }
      this.leave(this.waiting.shift() as Waiter, 'go');
    }
  };

  private leave(waiter: Waiter, turn: Turn): void {
    waiter.signal.removeEventListener('abort', waiter.onAbort);
    waiter.resolve(turn);
  }
}
