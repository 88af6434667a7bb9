import { jest } from '@jest/globals';
import { DeadlineClock } from './deadline.clock.js';

describe('DeadlineClock', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('times out each send timeoutMs after it started, in order, on one timer', () => {
    const clock = new DeadlineClock(1_000);
    const timedOut: string[] = [];
    clock.start(() => (timedOut.push('a'), false));
    jest.advanceTimersByTime(300);
    clock.start(() => (timedOut.push('b'), false));
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(699);
    expect(timedOut).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(timedOut).toEqual(['a']);
    jest.advanceTimersByTime(299);
    expect(timedOut).toEqual(['a']);
    jest.advanceTimersByTime(1);
    expect(timedOut).toEqual(['a', 'b']);
    expect(clock.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it("never times out a send that stopped; an idle clock lets its one timer run out, unref'd, and arms no other", () => {
    const clock = new DeadlineClock(1_000);
    const onTimeout = jest.fn(() => false);
    const first = clock.start(onTimeout);
    const second = clock.start(onTimeout);
    clock.stop(first);
    clock.stop(second);
    clock.stop(second); // twice is harmless
    expect(jest.getTimerCount()).toBe(1); // not cancelled and armed again for every short wait: it runs out
    for (let i = 0; i < 1_000; i++) clock.stop(clock.start(onTimeout)); // a stream of short waits: still one timer
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(5_000);
    expect(onTimeout).not.toHaveBeenCalled();
    expect(jest.getTimerCount()).toBe(0);
  });

  it("lets the process exit while only its timer runs (unref'd)", () => {
    jest.useRealTimers();
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length; // ref'd ones only
    const before = timers();
    const clock = new DeadlineClock(60_000);
    clock.stop(clock.start(() => false));
    expect(timers()).toBe(before);
  });

  it('keeps a patient send waiting, telling it how long it has waited each time', () => {
    const clock = new DeadlineClock(1_000);
    const waited: number[] = [];
    const patient = clock.start((ms) => (waited.push(ms), true));
    const later: number[] = [];
    jest.advanceTimersByTime(500);
    clock.start((ms) => (later.push(ms), false));
    jest.advanceTimersByTime(2_600);
    expect(waited).toEqual([1_000, 2_000, 3_000]);
    expect(later).toEqual([1_000]);
    clock.stop(patient);
    jest.advanceTimersByTime(1_000); // the timer armed for the patient one runs out, and no other is armed
    expect(jest.getTimerCount()).toBe(0);
  });

  it('times out many sends that come due together in one firing', () => {
    const clock = new DeadlineClock(100);
    const onTimeout = jest.fn(() => false);
    for (let n = 0; n < 1_000; n++) clock.start(onTimeout);
    jest.advanceTimersByTime(100);
    expect(onTimeout).toHaveBeenCalledTimes(1_000);
    expect(clock.size).toBe(0);
  });
});
