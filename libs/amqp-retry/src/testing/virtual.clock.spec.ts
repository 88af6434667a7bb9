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
