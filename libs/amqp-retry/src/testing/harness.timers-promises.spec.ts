import { Injectable, Module } from '@nestjs/common';
import { createRequire } from 'node:module';
import type * as TimersPromises from 'node:timers/promises';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

/**
 * `node:timers/promises` as CommonJS code (and code compiled to it) reads it: the module object, whose `setTimeout` is
 * looked up at each call. An ES module's named import reads the same object's value through its live binding.
 */
const timers = createRequire(import.meta.url)('node:timers/promises') as typeof TimersPromises;
const realSleep = timers.setTimeout;
const realAbortTimeout = AbortSignal.timeout;
/** Real milliseconds (the clock stands in for `performance.now()` and `Date`, not for `process.hrtime`). */
const realNow = () => Number(process.hrtime.bigint() / 1_000_000n);

/** Sleeps past its 3 s timeout with `node:timers/promises`. */
@Injectable()
class PromiseSleeper {
  @RetryWithBackoff({
    queue: 'harness.sleep.promise',
    exchange: 'harness.sleep',
    routingKey: 'promise',
    delays: ['1s'],
    maxAttempts: 2,
    timeout: '3s',
  })
  async run(): Promise<void> {
    await timers.setTimeout(4_000);
  }
}

/** Sleeps past its 3 s timeout with the global `setTimeout`. */
@Injectable()
class GlobalSleeper {
  @RetryWithBackoff({ queue: 'harness.sleep.global', exchange: 'harness.sleep', routingKey: 'global', delays: ['1s'], maxAttempts: 2, timeout: '3s' })
  async run(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 4_000));
  }
}

/** Gives up on its own after 3 s with `AbortSignal.timeout`, while it waits for a sleep of 4 s. */
@Injectable()
class AbortingSleeper {
  @RetryWithBackoff({ queue: 'harness.sleep.abort', exchange: 'harness.sleep', routingKey: 'abort', delays: ['1s'], maxAttempts: 2, timeout: '1m' })
  async run(): Promise<void> {
    await timers.setTimeout(4_000, undefined, { signal: AbortSignal.timeout(3_000) });
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [PromiseSleeper, GlobalSleeper, AbortingSleeper] })
class SleepersModule {}

describe('the test harness and handlers that sleep with node:timers/promises', () => {
  let harness: RetryHarness;
  let realStart: number;

  beforeEach(async () => {
    harness = await RetryHarness.start(SleepersModule);
    realStart = realNow();
  });
  afterEach(async () => {
    await harness.close();
  });

  it('its sleep takes virtual time: the handler’s timeout fires, as with the global setTimeout', async () => {
    const promised = harness.publish('harness.sleep', 'promise', {}).messageId;
    const global = harness.publish('harness.sleep', 'global', {}).messageId;
    await harness.settle();
    const trace = (id: string) => harness.attempts(id).map((a) => [a.at, a.outcome]);
    expect(trace(global)).toEqual([
      [0, 'retried'],
      [4_000, 'parked'],
    ]);
    expect(trace(promised)).toEqual(trace(global));
    expect(realNow() - realStart).toBeLessThan(1_000);
  });

  it('AbortSignal.timeout aborts in virtual time', async () => {
    const { messageId } = harness.publish('harness.sleep', 'abort', {});
    await harness.settle();
    expect(harness.attempts(messageId).map((a) => [a.at, a.outcome, a.error])).toEqual([
      [0, 'retried', expect.stringMatching(/aborted/)],
      [4_000, 'parked', expect.stringMatching(/aborted/)],
    ]);
    expect(realNow() - realStart).toBeLessThan(1_000);
  });

  it('close() gives node:timers/promises and AbortSignal.timeout back', async () => {
    expect([timers.setTimeout, AbortSignal.timeout]).not.toEqual([realSleep, realAbortTimeout]);
    await harness.close();
    expect([timers.setTimeout, AbortSignal.timeout]).toEqual([realSleep, realAbortTimeout]);
    expect(await timers.setTimeout(1, 'real')).toBe('real');
  });
});
