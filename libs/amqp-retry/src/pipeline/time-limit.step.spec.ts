import { getEventListeners } from 'node:events';
import { HandlerTimeoutError } from '../errors/handler-timeout.error.js';
import type { RetryContext } from '../core/delivery/retry.context.js';
import type { HandlerInvoker } from './delivery.contracts.js';
import { withHandlerTimeout } from './time-limit.step.js';

const contextWith = (signal: AbortSignal = new AbortController().signal, attempt = 2) => ({ attempt, signal }) as unknown as RetryContext;
const later = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe('the time-limit step (withHandlerTimeout)', () => {
  it('leaves the invoker as it is without a limit', () => {
    const invoke: HandlerInvoker = async () => 'done';
    expect(withHandlerTimeout(invoke, 0, 'orders')).toBe(invoke);
  });

  it('passes a call that ends in time through, result and error alike', async () => {
    await expect(withHandlerTimeout(() => later(5, 'done'), 1_000, 'orders')(1, contextWith())).resolves.toBe('done');
    const failing = withHandlerTimeout(() => Promise.reject(new Error('declined')), 1_000, 'orders');
    await expect(failing(1, contextWith())).rejects.toThrow('declined');
  });

  it('fails a call past its limit with a HandlerTimeoutError, aborts its signal with it, and drops the late result', async () => {
    let seen: AbortSignal | undefined;
    let finished = false;
    const slow = withHandlerTimeout(
      async (_payload, context) => {
        seen = context.signal;
        await later(80, undefined);
        finished = true;
        return 'late';
      },
      20,
      'orders',
    );
    const started = Date.now();
    const failure = await slow(1, contextWith()).catch((error: unknown) => error);
    expect(Date.now() - started).toBeGreaterThanOrEqual(19);
    expect(Date.now() - started).toBeLessThan(70);
    expect(failure).toBeInstanceOf(HandlerTimeoutError);
    expect(failure).toMatchObject({ queue: 'orders', timeoutMs: 20, attempt: 2 });
    expect((failure as Error).message).toBe(
      'The handler of "orders" did not finish attempt 2 within its timeout of 20ms: its signal was aborted and the attempt counts as failed',
    );
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBe(failure);
    await later(100, undefined);
    expect(finished).toBe(true); // it ran on, ignoring its signal; nothing came of it
  });

  it('turns a synchronous throw into a failed attempt', async () => {
    const throwing = withHandlerTimeout(
      () => {
        throw new Error('at once');
      },
      1_000,
      'orders',
    );
    await expect(throwing(1, contextWith())).rejects.toThrow('at once');
  });

  it("aborts the call's signal when the delivery's aborts", async () => {
    const delivery = new AbortController();
    let seen: AbortSignal | undefined;
    const call = withHandlerTimeout(
      async (_payload, context) => {
        seen = context.signal;
        return later(30, 'done');
      },
      1_000,
      'orders',
    )(1, contextWith(delivery.signal));
    delivery.abort(new Error('channel lost'));
    expect(seen?.aborted).toBe(true);
    expect((seen?.reason as Error).message).toBe('channel lost');
    await expect(call).resolves.toBe('done');
  });

  it("makes the call's signal only when the handler reads it, and leaves no listener on the delivery's signal", async () => {
    const delivery = new AbortController();
    const listeners = () => getEventListeners(delivery.signal, 'abort').length;
    const quiet = withHandlerTimeout(async () => 'done', 1_000, 'orders');
    await expect(quiet(1, contextWith(delivery.signal))).resolves.toBe('done');
    let seen: AbortSignal | undefined;
    const reading = withHandlerTimeout(
      async (_payload, context) => {
        seen = context.signal;
        expect(listeners()).toBe(1); // followed while the call runs
        return later(5, 'read');
      },
      1_000,
      'orders',
    );
    await expect(reading(1, contextWith(delivery.signal))).resolves.toBe('read');
    expect(listeners()).toBe(0);
    expect(seen?.aborted).toBe(false);
  });

  it('times out each of many concurrent calls at its own deadline, on one timer', async () => {
    // Times on performance.now(), the clock's own. A process descheduled for 30 ms after the second call started (CI,
    // lint running beside it) fires the clock's timer late, and that one pass rightly times both calls out (CI once
    // saw them 1 ms apart): so the test asserts what holds whatever the timers' lateness, that neither call times
    // out before its own 30 ms, nor the second at the first's deadline.
    const calls = withHandlerTimeout(() => new Promise(() => undefined), 30, 'orders');
    const timedOut = (start: number) =>
      calls(1, contextWith()).then(
        () => -1,
        () => performance.now() - start,
      );
    const firstStart = performance.now();
    const first = timedOut(firstStart);
    while (performance.now() - firstStart < 15) await later(1, undefined);
    const secondStart = performance.now();
    const second = timedOut(secondStart);
    const [a, b] = await Promise.all([first, second]);
    expect(a).toBeGreaterThanOrEqual(29); // each after its own 30 ms, measured from its own start
    expect(b).toBeGreaterThanOrEqual(29);
    expect(secondStart + b).toBeGreaterThanOrEqual(firstStart + a); // not before the first: later deadline
    expect(secondStart + b - firstStart).toBeGreaterThanOrEqual(44); // not at the first's deadline
  });
});
