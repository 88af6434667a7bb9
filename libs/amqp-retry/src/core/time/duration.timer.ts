/**
 * The one place where the library turns a duration into a timer. Node's timers take at most 2^31-1 ms (about 24.8
 * days): a longer delay fires after 1 ms. The configuration accepts longer durations, so a long timer is a chain.
 */

/** The longest delay a single Node timer waits; a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A running timer. Every method is safe to call at any time, also after it fired or was cancelled. */
export interface DurationTimer {
  /** Stops it: the callback will not run (again). */
  cancel(): void;
  /** Lets the process exit while only this timer waits (as Node's `timeout.unref()`). */
  unref(): DurationTimer;
}

/** NaN and negatives count as 0 (Node's timers treat them as 1 ms); Infinity waits for ever, one step at a time. */
const startingAt = (ms: number): number => (ms > 0 ? ms : 0);

/**
 * A chain of Node timers of at most MAX_TIMER_MS each, repeating every `every` ms when given; a class, so that the hot
 * path (a timer per publish) allocates little.
 */
class ChainedTimer implements DurationTimer {
  private left: number;
  private held = true;
  private current: NodeJS.Timeout | undefined;

  constructor(
    ms: number,
    private callback: (() => void) | undefined,
    private readonly every?: number,
  ) {
    this.left = startingAt(ms);
    this.arm();
  }

  cancel(): void {
    this.callback = undefined;
    clearTimeout(this.current);
    this.current = undefined;
  }

  unref(): DurationTimer {
    this.held = false;
    this.current?.unref();
    return this;
  }

  private arm(): void {
    const step = Math.min(this.left, MAX_TIMER_MS);
    this.left -= step;
    this.current = setTimeout(stepEnded, step, this);
    if (!this.held) this.current.unref();
  }

  /** @internal */
  stepEnded(): void {
    if (this.left > 0) return this.arm();
    const callback = this.callback;
    if (this.every === undefined) {
      this.current = undefined;
      this.callback = undefined;
    } else {
      this.left = this.every;
      this.arm(); // armed first, so that a callback that cancels stops the next round
    }
    callback?.();
  }
}

const stepEnded = (timer: ChainedTimer) => timer.stepEnded();

/**
 * Calls `callback` once, after `ms` (any length; Infinity: never).
 * @example const timer = startTimer(30 * 86_400_000, stop).unref(); // 30 days, not 1 ms
 */
export function startTimer(ms: number, callback: () => void): DurationTimer {
  return new ChainedTimer(ms, callback);
}

/** Calls `callback` every `ms` (at least 1 ms apart, as Node's setInterval) until cancelled. */
export function startInterval(ms: number, callback: () => void): DurationTimer {
  const every = Math.max(1, startingAt(ms));
  return new ChainedTimer(every, callback, every);
}

/** Resolves after `ms`, or as soon as `signal` aborts (never rejects). `unref`: the wait does not keep the process alive. */
export function sleep(ms: number, options: { signal?: AbortSignal; unref?: boolean } = {}): Promise<void> {
  const { signal, unref = false } = options;
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      timer.cancel();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = startTimer(ms, done);
    if (unref) timer.unref();
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Settles as `work` does, or rejects with `onTimeout()` once `ms` passed first; `work` itself is not cancelled. */
export function withinTime<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: DurationTimer | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = startTimer(ms, () => reject(onTimeout()));
  });
  return Promise.race([work, expired]).finally(() => timer?.cancel());
}
