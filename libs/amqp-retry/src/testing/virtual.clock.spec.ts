import { VirtualClock } from './virtual.clock.js';

/** Runs `body` with `clock` standing in for the global timers, and puts them back whatever happens. */
async function installed<T>(clock: VirtualClock, body: () => Promise<T>): Promise<T> {
  clock.install();
  try {
    return await body();
  } finally {
    clock.uninstall();
  }
}

describe('the virtual clock’s timers', () => {
  it('refresh() makes a timer due its whole delay from now again, as in Node, and re-arms one that fired', async () => {
    const clock = new VirtualClock(0);
    const fired: number[] = [];
    await installed(clock, async () => {
      const timer = setTimeout(() => fired.push(clock.elapsed), 30_000);
      await clock.runUntil(10_000);
      timer.refresh();
      await clock.runUntil(39_999);
      expect(fired).toEqual([]);
      await clock.runUntil(40_000);
      timer.refresh();
      await clock.runUntil(100_000);
    });
    expect(fired).toEqual([40_000, 70_000]);
  });

  it('close() cancels a timer: it neither runs nor counts as pending', async () => {
    const clock = new VirtualClock(0);
    let fired = 0;
    await installed(clock, async () => {
      setTimeout(() => fired++, 1_000).close();
      expect(clock.pending()).toBe(0);
      await clock.runUntil(5_000);
    });
    expect(fired).toBe(0);
  });

  it('disposing a timer (`using`) cancels it, as disposing one of Node’s does', async () => {
    const clock = new VirtualClock(0);
    let fired = 0;
    await installed(clock, async () => {
      const timer = setTimeout(() => fired++, 1_000);
      timer[Symbol.dispose]();
      expect(clock.pending()).toBe(0);
      await clock.runUntil(5_000);
    });
    expect(fired).toBe(0);
  });

  it("clearing a handle of an earlier clock leaves this clock's timer of the same id alone", async () => {
    const earlier = new VirtualClock(0);
    const stale = await installed(earlier, async () => setTimeout(() => undefined, 1_000));
    const clock = new VirtualClock(0);
    let fired = 0;
    await installed(clock, async () => {
      const timer = setTimeout(() => fired++, 1_000);
      expect(Number(timer)).toBe(Number(stale)); // the same id: the case at stake
      clearTimeout(stale);
      await clock.runUntil(2_000);
    });
    expect(fired).toBe(1);
  });

  it('a timer set before install and cleared while installed is cleared (by the clear it came from)', async () => {
    let fired = 0;
    const real = setTimeout(() => fired++, 20);
    const clock = new VirtualClock(0);
    await installed(clock, async () => clearTimeout(real));
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(fired).toBe(0);
  });
});

describe('the virtual clock’s Date', () => {
  it('lets a subclass of Date make instances of its own, reading the virtual time', async () => {
    const clock = new VirtualClock(86_400_000);
    const made = await installed(clock, async () => {
      class Day extends Date {
        label(): string {
          return this.toISOString().slice(0, 10);
        }
      }
      const day = new Day();
      const given = new Day(0);
      return { isDay: day instanceof Day, isDate: day instanceof Date, label: day.label(), given: given.getTime(), now: Day.now() };
    });
    expect(made).toEqual({ isDay: true, isDate: true, label: '1970-01-02', given: 0, now: 86_400_000 });
  });
});

describe('the virtual clock’s timer delays, read as Node reads them', () => {
  /** When (virtual ms) a timer of `delay` fires, or undefined when not within 10 ms. */
  async function firesAt(delay: unknown): Promise<number | undefined> {
    const clock = new VirtualClock(0);
    let at: number | undefined;
    await installed(clock, async () => {
      setTimeout(() => (at = clock.elapsed), delay as number);
      await clock.runUntil(10);
    });
    return at;
  }

  it('truncates a fractional delay to whole milliseconds', async () => {
    expect(await firesAt(2.7)).toBe(2);
  });

  it('fires a delay below 1 ms or above 2^31 - 1 ms after 1 ms, as Node does', async () => {
    expect(await firesAt(0.5)).toBe(1);
    expect(await firesAt(2 ** 31)).toBe(1);
    expect(await firesAt(Number.MAX_SAFE_INTEGER)).toBe(1);
  });

  it('runs a zero, absent or negative delay at once', async () => {
    expect(await firesAt(0)).toBe(0);
    expect(await firesAt(undefined)).toBe(0);
    expect(await firesAt(-5)).toBe(0);
  });
});
