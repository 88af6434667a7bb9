import { RetryConfigError } from '../errors/retry-config.error.js';
import { RetryEngine } from './retry.engine.js';

describe('RetryEngine.create, the engine without Nest', () => {
  it('reads the options RetryModule takes, and connects only when used', async () => {
    const engine = RetryEngine.create({ url: 'amqp://guest:guest@127.0.0.1:1', delays: ['1s'] });
    expect(engine.health()).toEqual({ connections: { consume: undefined, publish: undefined }, queues: [] });
    expect(engine.isConsuming).toBe(true);
    await engine.close();
  });

  it('fails as RetryModule does on a bad option, naming it', () => {
    expect(() => RetryEngine.create({ delays: ['soon'] })).toThrow(RetryConfigError);
    expect(() => RetryEngine.create({ delays: ['soon'] })).toThrow('RetryModule option "delays"');
  });
});

describe('RetryEngine shutdown, bounded', () => {
  /** A stop that never ends: what waits on a channel open that a blocked broker (an alarm) never answers. */
  const stuckRuntime = { stop: () => new Promise<void>(() => undefined) };

  it('returns from stopConsuming after twice the shutdown timeout and 2 s, with a warning naming the alarm, and close() ends', async () => {
    const warnings: string[] = [];
    const logger = { log: () => undefined, error: () => undefined, debug: () => undefined, warn: (line: string) => void warnings.push(line) };
    const engine = RetryEngine.create({ url: 'amqp://guest:guest@127.0.0.1:1', shutdownTimeout: '100ms' }, logger);
    (engine as unknown as { runtimes: unknown[] }).runtimes.push(stuckRuntime);
    const started = Date.now();
    await engine.stopConsuming();
    const stoppedMs = Date.now() - started;
    await engine.close();
    expect(stoppedMs).toBeGreaterThanOrEqual(2_150);
    expect(stoppedMs).toBeLessThan(4_000);
    expect(warnings).toEqual([expect.stringContaining('memory and disk alarms')]);
  }, 15_000);
});
