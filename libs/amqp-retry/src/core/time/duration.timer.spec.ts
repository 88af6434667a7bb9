import { jest } from '@jest/globals';
import { MAX_TIMER_MS, sleep, startInterval, startTimer, withinTime } from './duration.timer.js';

const DAY = 86_400_000;

describe('duration timers', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("shows the defect they exist for: Node's own timer of 2^31 ms fires after 1 ms (the fake clock does as Node)", () => {
    const fired = jest.fn();
    setTimeout(fired, 2 ** 31);
    jest.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it.each([
    ['2^31-1 (the longest single Node timer)', MAX_TIMER_MS],
    ['2^31 (the first that overflows)', 2 ** 31],
    ['2^32-1 (the longest TTL RabbitMQ accepts)', 2 ** 32 - 1],
    ['100 days', 100 * DAY],
    ['one year', 366 * DAY],
  ])('fires once, after exactly %s', (_name, ms) => {
    const fired = jest.fn();
    startTimer(ms, fired);
    jest.advanceTimersByTime(ms - 1);
    expect(fired).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
    jest.advanceTimersByTime(10 * ms);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it.each([0, 1, 1500])('fires a short delay of %p ms like setTimeout', (ms) => {
    const fired = jest.fn();
    startTimer(ms, fired);
    jest.advanceTimersByTime(Math.max(0, ms - 1));
    if (ms > 1) expect(fired).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('treats NaN and negatives as 0 and Infinity as never, without a hot loop', () => {
    const soon = jest.fn();
    startTimer(Number.NaN, soon);
    startTimer(-5, soon);
    const never = jest.fn();
    startTimer(Number.POSITIVE_INFINITY, never);
    jest.advanceTimersByTime(1);
    expect(soon).toHaveBeenCalledTimes(2);
    jest.advanceTimersByTime(10 * MAX_TIMER_MS);
    expect(never).not.toHaveBeenCalled();
    expect(jest.getTimerCount()).toBe(1); // the one step of the never-firing timer
  });

  it('cancels at any step of a long chain, and cancelling twice or after firing is harmless', () => {
    const fired = jest.fn();
    const timer = startTimer(2 ** 32 - 1, fired);
    jest.advanceTimersByTime(MAX_TIMER_MS + 5); // into the second step
    timer.cancel();
    timer.cancel();
    jest.advanceTimersByTime(2 ** 32);
    expect(fired).not.toHaveBeenCalled();
    expect(jest.getTimerCount()).toBe(0);
    const done = startTimer(10, fired);
    jest.advanceTimersByTime(10);
    done.cancel();
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('keeps unref across the steps of a long chain', () => {
    const armed = jest.spyOn(globalThis, 'setTimeout');
    const steps = () => armed.mock.results.map((result) => (result.value as NodeJS.Timeout).hasRef());
    const timer = startTimer(2 ** 32, () => undefined).unref();
    jest.advanceTimersByTime(MAX_TIMER_MS); // the first step ends: the second is armed
    expect(steps()).toEqual([false, false]);
    timer.cancel();
    armed.mockRestore();
  });

  it('repeats an interval of 2^31 ms every 2^31 ms, not every 1 ms; cancel from inside the callback stops it', () => {
    const ticks: number[] = [];
    const start = Date.now();
    const interval = startInterval(2 ** 31, () => {
      ticks.push(Date.now() - start);
      if (ticks.length === 3) interval.cancel();
    });
    jest.advanceTimersByTime(2 ** 31 - 1);
    expect(ticks).toEqual([]);
    jest.advanceTimersByTime(10 * 2 ** 31);
    expect(ticks).toEqual([2 ** 31, 2 ** 32, 3 * 2 ** 31]);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('runs an interval of 0 every 1 ms, as setInterval does, never in a synchronous loop', () => {
    const tick = jest.fn();
    const interval = startInterval(0, tick);
    jest.advanceTimersByTime(5);
    expect(tick).toHaveBeenCalledTimes(5);
    interval.cancel();
  });

  it('sleep resolves after the time, or at once when its signal aborts', async () => {
    let slept = false;
    void sleep(2 ** 31).then(() => (slept = true));
    await jest.advanceTimersByTimeAsync(2 ** 31 - 1);
    expect(slept).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(slept).toBe(true);

    const abort = new AbortController();
    let cut = false;
    void sleep(30 * DAY, { signal: abort.signal }).then(() => (cut = true));
    await jest.advanceTimersByTimeAsync(10);
    abort.abort();
    await Promise.resolve();
    expect(cut).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
    await sleep(30 * DAY, { signal: abort.signal }); // already aborted: at once
  });

  it('withinTime keeps a long limit, rejects with its error when it passes, and leaves no timer behind', async () => {
    const never = new Promise<string>(() => undefined);
    const limited = withinTime(never, 30 * DAY, () => new Error('too slow'));
    let outcome: unknown;
    limited.catch((error: unknown) => (outcome = error));
    await jest.advanceTimersByTimeAsync(30 * DAY - 1);
    expect(outcome).toBeUndefined();
    await jest.advanceTimersByTimeAsync(1);
    expect(outcome).toEqual(new Error('too slow'));

    await expect(withinTime(Promise.resolve('done'), 30 * DAY, () => new Error('x'))).resolves.toBe('done');
    expect(jest.getTimerCount()).toBe(0);
  });
});
