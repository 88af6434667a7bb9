import { setMaxListeners } from 'node:events';
import { formatDuration } from '../core/time/duration.reader.js';
import { DeadlineClock } from '../core/time/deadline.clock.js';
import { sleep } from '../core/time/duration.timer.js';
import { HandlerTimeoutError, isTimeout } from '../errors/handler-timeout.error.js';
import type { HandlerInvoker, Middleware, PolicyOf } from './delivery.contracts.js';
import type { ConsumeMessage } from 'amqplib';
import type { RetryContext } from '../core/delivery/retry.context.js';
import type { XDeath } from '../core/delivery/x-death.parser.js';

const ignore = (): undefined => undefined;

/**
 * The time-limit step: each call bounded by its delivery's policy (`timeoutMs`; see withHandlerTimeout). A queue
 * whose deliveries share one policy gets one bounded invoker; a routed queue one per distinct limit, made on first use.
 */
export function timeLimitStep(queue: string, policyOf: PolicyOf, fixedTimeoutMs?: number): Middleware | undefined {
  if (fixedTimeoutMs !== undefined) return fixedTimeoutMs > 0 ? (invoke) => withHandlerTimeout(invoke, fixedTimeoutMs, queue) : undefined;
  return (invoke) => {
    const byLimit = new Map<number, HandlerInvoker>();
    return (payload, context) => {
      const timeoutMs = policyOf(context).timeoutMs ?? 0;
      let bounded = byLimit.get(timeoutMs);
      if (!bounded) byLimit.set(timeoutMs, (bounded = withHandlerTimeout(invoke, timeoutMs, queue)));
      return bounded(payload, context);
    };
  };
}

/**
 * A handler call bounded in time: past `timeoutMs` its `signal` aborts with a HandlerTimeoutError and the call rejects
 * with it, so the attempt fails as any other. What the abandoned call returns or throws later is dropped. 0: no limit.
 * Cost per call: one entry in the queue's deadline clock (one timer for all) and one promise; the AbortController is
 * made only if the handler reads `context.signal`.
 * @example withHandlerTimeout(invoke, 30_000, 'orders') // a call of more than 30 s fails its attempt
 */
export function withHandlerTimeout(invoke: HandlerInvoker, timeoutMs: number, queue: string): HandlerInvoker {
  if (!(timeoutMs > 0)) return invoke;
  const formatted = formatDuration(timeoutMs);
  const clock = new DeadlineClock(timeoutMs);
  return (payload, context) =>
    new Promise<unknown>((resolve, reject) => {
      const call = new TimedCall(context.signal);
      const wait = clock.start(() => {
        const error = new HandlerTimeoutError(queue, timeoutMs, context.attempt, formatted);
        error.callEnded = running.then(ignore, ignore);
        call.expire(error);
        reject(error);
        return false;
      });
      let running: Promise<unknown>;
      try {
        running = Promise.resolve(invoke(payload, new TimedContext(context, call)));
      } catch (error) {
        running = Promise.reject(error);
      }
      // After a timeout these settle a promise that settled already: the late result changes nothing.
      running.then(
        (value) => {
          clock.stop(wait);
          call.end();
          resolve(value);
        },
        (error: unknown) => {
          clock.stop(wait);
          call.end();
          reject(error);
        },
      );
    });
}

/**
 * After a failure: when it is a call's timeout, resolves once that abandoned call has ended, or after one more
 * timeout at most (a call that never ends must not hold its key for ever), or once `signal` aborts; else at once.
 * Whatever runs next for the same key (its later message, its retry in place) waits for it, so as not to run beside
 * the abandoned call. Its timer does not keep the process alive.
 */
export async function abandonedCallEnded(error: unknown, signal?: AbortSignal): Promise<void> {
  if (!isTimeout(error)) return;
  const { callEnded, timeoutMs } = error;
  const bound = new AbortController();
  const stop = () => bound.abort();
  signal?.addEventListener('abort', stop, { once: true });
  if (signal?.aborted) stop();
  await Promise.race([callEnded, sleep(timeoutMs, { signal: bound.signal, unref: true })]);
  stop();
  signal?.removeEventListener('abort', stop);
}

/**
 * The context a timed call gets: the delivery's, with the call's own signal. A class, not `{ ...context, get signal() }`:
 * V8 builds an object literal that spreads and then defines an accessor slowly (5 µs a call, measured).
 */
class TimedContext implements RetryContext {
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly isLastAttempt: boolean;
  readonly queue: string;
  readonly message: ConsumeMessage;
  readonly deaths: XDeath[];
  /** The inbox's transaction, when the handler runs in one (typed as the invoker's context types it). */
  readonly transaction?: RetryContext['transaction'];

  constructor(
    context: RetryContext,
    private readonly call: TimedCall,
  ) {
    this.attempt = context.attempt;
    this.maxAttempts = context.maxAttempts;
    this.isLastAttempt = context.isLastAttempt;
    this.queue = context.queue;
    this.message = context.message;
    this.deaths = context.deaths;
    if (context.transaction !== undefined) this.transaction = context.transaction;
  }

  get signal(): AbortSignal {
    return this.call.signal;
  }
}

/** The signal of one timed call, made on first read: aborted by the time limit or by the delivery's signal while the call runs. */
class TimedCall {
  private controller?: AbortController;
  private follow?: () => void;
  private expiredWith?: HandlerTimeoutError;
  private ended = false;

  constructor(private readonly outer: AbortSignal) {}

  get signal(): AbortSignal {
    if (this.controller) return this.controller.signal;
    const controller = new AbortController();
    setMaxListeners(0, controller.signal); // the handler's own listeners, as many as it needs
    this.controller = controller;
    if (this.expiredWith) controller.abort(this.expiredWith);
    else if (this.outer.aborted) controller.abort(this.outer.reason);
    else if (!this.ended) {
      this.follow = () => controller.abort(this.outer.reason);
      this.outer.addEventListener('abort', this.follow, { once: true });
    }
    return controller.signal;
  }

  /** The time limit passed: the signal (if read, or when read) aborts with the error. */
  expire(error: HandlerTimeoutError): void {
    this.expiredWith = error;
    this.controller?.abort(error);
    this.end();
  }

  /** The call settled (or was abandoned): it no longer follows the delivery's signal. */
  end(): void {
    this.ended = true; // a read after this follows nothing: no listener is left on the delivery's signal
    if (this.follow) this.outer.removeEventListener('abort', this.follow);
    this.follow = undefined;
  }
}
