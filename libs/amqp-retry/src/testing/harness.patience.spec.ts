import { Injectable, Module } from '@nestjs/common';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

/** Waits for something real that never comes, and has no timeout: nothing on the clock ends it. */
@Injectable()
class NeverSettles {
  @RetryWithBackoff({ queue: 'harness.never', exchange: 'harness.patience', routingKey: 'never', delays: ['1s'] })
  async run(): Promise<void> {
    await new Promise(() => undefined);
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [NeverSettles] })
class NeverModule {}

const realMs = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e6;

/** Jest's default timeout for a test or a hook: what the harness's own errors must come well inside of. */
const JEST_DEFAULT_TIMEOUT_MS = 5_000;

describe("the test harness's patience for a handler that never settles", () => {
  let harness: RetryHarness | undefined;

  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it('settle names what is stuck after 2 s of real time, before Jest would time out, and close() takes no longer', async () => {
    harness = await RetryHarness.start(NeverModule);
    harness.publish('harness.patience', 'never', {});
    let started = process.hrtime.bigint();
    await expect(harness.settle()).rejects.toThrow('harness: nothing moved for 2000 ms of real time: harness.never (0 ready, 1 unacknowledged)');
    expect(realMs(started)).toBeLessThan(JEST_DEFAULT_TIMEOUT_MS - 2_000);
    started = process.hrtime.bigint();
    await harness.close();
    expect(realMs(started)).toBeLessThan(JEST_DEFAULT_TIMEOUT_MS - 2_000);
  });

  it('close() with the handler still running waits for it no longer than the patience', async () => {
    harness = await RetryHarness.start(NeverModule);
    harness.publish('harness.patience', 'never', {});
    await harness.advance('1s');
    const started = process.hrtime.bigint();
    await harness.close();
    expect(realMs(started)).toBeLessThan(JEST_DEFAULT_TIMEOUT_MS - 2_000);
  });

  it('realIoPatience sets it', async () => {
    harness = await RetryHarness.start(NeverModule, { realIoPatience: '300ms' });
    harness.publish('harness.patience', 'never', {});
    const started = process.hrtime.bigint();
    await expect(harness.settle()).rejects.toThrow('nothing moved for 300 ms of real time');
    expect(realMs(started)).toBeLessThan(1_000);
    expect(realMs(started)).toBeGreaterThanOrEqual(300);
  });
});
