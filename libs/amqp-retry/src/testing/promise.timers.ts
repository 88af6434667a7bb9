/** The longest delay a Node timer takes (2^31 - 1 ms); a longer one fires after 1 ms. */
const TIMEOUT_MAX = 2 ** 31 - 1;

/**
 * A timer's delay as Node reads it: truncated to whole milliseconds, and 1 when below 1 or above TIMEOUT_MAX. A zero,
 * absent or negative delay (not a number) is a zero-delay timer, which here runs at once by itself: Node's 1 ms is a
 * turn of its event loop, which takes no virtual time.
 */
export function timerDelay(delay: unknown): number {
  const ms = Number(delay);
  if (!(ms > 0)) return 0;
  return ms < 1 || ms > TIMEOUT_MAX ? 1 : Math.trunc(ms);
}

/** A task on the clock, as far as the promise timers use it. */
interface ClockTask {
  unref(): unknown;
}

/** What the promise timers need of the virtual clock: to schedule a task (once, or every `every` ms) and to cancel it. */
export interface TimerHost<T extends ClockTask> {
  schedule(delayMs: number, run: () => void, options?: { every?: number }): T;
  cancel(task: T): void;
}

/** The options of `node:timers/promises`' timers. */
interface PromiseTimerOptions {
  signal?: AbortSignal;
  ref?: boolean;
}

/** Node's AbortError: what a promise timer rejects with when its signal aborts. */
function abortError(signal: AbortSignal): Error {
  return Object.assign(new Error('The operation was aborted', { cause: signal.reason }), { name: 'AbortError', code: 'ABORT_ERR' });
}

/** The options as Node checks them: an object (or none), a signal that is an AbortSignal, `ref` a boolean. */
function readOptions(options: unknown): PromiseTimerOptions {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object') throw new TypeError('The "options" argument must be of type object');
  const { signal, ref } = options as PromiseTimerOptions;
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw new TypeError('The "options.signal" property must be an instance of AbortSignal');
  if (ref !== undefined && typeof ref !== 'boolean') throw new TypeError('The "options.ref" property must be of type boolean');
  return { signal, ref };
}

/**
 * Stand-ins, on the virtual clock, for `node:timers/promises` (`setTimeout`, `setImmediate`, `setInterval`,
 * `scheduler.wait`, `scheduler.yield`) and `AbortSignal.timeout`, as Node defines them: a timer with `ref: false` is
 * unreferenced, an aborted signal rejects with an AbortError (and cancels the timer), and `AbortSignal.timeout`'s timer
 * is unreferenced, as Node's is.
 */
export function promiseTimers<T extends ClockTask>(host: TimerHost<T>) {
  const sleep = <V>(delay: unknown, value: V, options: unknown): Promise<V> => {
    const { signal, ref } = readOptions(options);
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Promise<V>((resolve, reject) => {
      const onAbort = () => {
        host.cancel(task);
        reject(abortError(signal as AbortSignal));
      };
      const task = host.schedule(timerDelay(delay), () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(value);
      });
      if (ref === false) task.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  };

  async function* setInterval<V>(delay?: unknown, value?: V, options?: unknown): AsyncGenerator<V, void, unknown> {
    const { signal, ref } = readOptions(options);
    if (signal?.aborted) throw abortError(signal);
    let ticks = 0;
    let wake: (() => void) | undefined;
    const every = Math.max(1, timerDelay(delay));
    const task = host.schedule(
      every,
      () => {
        ticks++;
        wake?.();
      },
      { every },
    );
    if (ref === false) task.unref();
    const onAbort = () => wake?.();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        if (ticks === 0 && !signal?.aborted) await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        if (signal?.aborted) throw abortError(signal);
        ticks--;
        yield value as V;
      }
    } finally {
      host.cancel(task);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  return {
    setTimeout: <V = void>(delay?: unknown, value?: V, options?: unknown) => sleep(delay, value, options),
    setImmediate: <V = void>(value?: V, options?: unknown) => sleep(0, value, options),
    setInterval,
    wait: (delay: unknown, options?: unknown) => sleep(delay, undefined, options),
    yield: () => sleep(0, undefined, undefined),
    abortSignalTimeout: (delay: unknown): AbortSignal => {
      if (typeof delay !== 'number') throw new TypeError('The "delay" argument must be of type number');
      if (!Number.isInteger(delay) || delay < 0 || delay > 2 ** 32 - 1)
        throw new RangeError(`The value of "delay" is out of range. It must be >= 0 && <= 4294967295. Received ${delay}`);
      const controller = new AbortController();
      const abort = () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
      host.schedule(timerDelay(delay), abort).unref();
      return controller.signal;
    },
  };
}
