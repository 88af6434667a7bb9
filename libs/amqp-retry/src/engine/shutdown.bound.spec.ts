import { ShutdownBound } from './shutdown.bound.js';

describe('the engine shutdown, bounded', () => {
  /** A stop that never ends: what waits on a channel open that a blocked broker (an alarm) never answers. */
  const stuck = () => new Promise<void>(() => undefined);

  it('returns from a stuck stop after twice the shutdown timeout and 2 s, with a warning naming the alarm, and closed() ends', async () => {
    const warnings: string[] = [];
    const logger = { log: () => undefined, error: () => undefined, debug: () => undefined, warn: (line: string) => void warnings.push(line) };
    const bound = new ShutdownBound(100, logger);
    const started = Date.now();
    await bound.stop(stuck());
    const stoppedMs = Date.now() - started;
    const closing = Date.now();
    await bound.closed();
    expect(stoppedMs).toBeGreaterThanOrEqual(2_150);
    expect(stoppedMs).toBeLessThan(4_000);
    expect(Date.now() - closing).toBeLessThan(3_000);
    expect(warnings).toEqual([expect.stringContaining('memory and disk alarms')]);
  }, 15_000);

  it('returns at once, silently, from a stop that ends in time', async () => {
    const warnings: string[] = [];
    const logger = { log: () => undefined, error: () => undefined, debug: () => undefined, warn: (line: string) => void warnings.push(line) };
    const bound = new ShutdownBound(100, logger);
    const started = Date.now();
    await bound.stop(Promise.resolve());
    await bound.closed();
    expect(Date.now() - started).toBeLessThan(500);
    expect(warnings).toEqual([]);
  });
});
