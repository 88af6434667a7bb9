import { Injectable, Module } from '@nestjs/common';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

let sleepMs = 0;

@Injectable()
class SleepyHandler {
  @RetryWithBackoff({ queue: 'harness.sleepy', exchange: 'harness.s', routingKey: 'k', delays: ['1s'] })
  async handle(): Promise<void> {
    if (sleepMs > 0) await new Promise((resolve) => setTimeout(resolve, sleepMs));
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [SleepyHandler] })
class SleepyModule {}

const realMs = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e6;

describe('settle({ within }) when what is under way lies past it', () => {
  let harness: RetryHarness;

  beforeEach(async () => {
    sleepMs = 0;
    harness = await RetryHarness.start(SleepyModule);
  });
  afterEach(async () => {
    harness.failures.clear();
    await harness.close();
  });

  it('fails at once, naming the queue whose consumer it waits for and the timers, when the reconnection is due later', async () => {
    harness.failures.loseConnections(40 * 86_400_000);
    const started = process.hrtime.bigint();
    const settling = harness.settle({ within: '1h' });
    await expect(settling).rejects.toThrow(
      /still busy after 3600000 ms of virtual time: .*harness\.sleepy \(waiting for the application to consume it again\)/,
    );
    await expect(settling).rejects.toThrow(/application timers? \(the next due in \d+ ms\)/);
    expect(realMs(started)).toBeLessThan(2_000);
  });

  it('fails at once, naming the handler queue and the timers, when a handler awaits a timer due later', async () => {
    sleepMs = 3_600_000;
    harness.publish('harness.s', 'k', {});
    const started = process.hrtime.bigint();
    const settling = harness.settle({ within: '1m' });
    await expect(settling).rejects.toThrow(
      /still busy after 60000 ms of virtual time: harness\.sleepy \(0 ready, 1 unacknowledged\), \d+ application timers?/,
    );
    expect(realMs(started)).toBeLessThan(2_000);
    await harness.settle({ within: '2h' });
    expect(harness.handled('harness.sleepy')).toHaveLength(1);
  });
});
