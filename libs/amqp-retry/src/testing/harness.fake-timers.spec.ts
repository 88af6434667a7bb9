import { Injectable, Module } from '@nestjs/common';
import { jest } from '@jest/globals';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

/** Waits for something real that never comes: only its timeout ends an attempt. */
@Injectable()
class StuckHandler {
  @RetryWithBackoff({ queue: 'harness.stuck', exchange: 'harness.fake', routingKey: 'stuck', delays: ['1s'], maxAttempts: 1, timeout: '5s' })
  async run(): Promise<void> {
    await new Promise(() => undefined);
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [StuckHandler] })
class StuckModule {}

let failures = 1;

@Injectable()
class FlakyHandler {
  @RetryWithBackoff({ queue: 'harness.flaky', exchange: 'harness.fake', routingKey: 'flaky', delays: ['1s'], maxAttempts: 3 })
  async run(): Promise<void> {
    if (failures-- > 0) throw new Error('boom');
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [FlakyHandler] })
class FlakyModule {}

describe('the test harness with Jest fake timers on before the start', () => {
  let harness: RetryHarness;

  beforeAll(async () => {
    jest.useFakeTimers();
    harness = await RetryHarness.start(StuckModule);
  });
  afterAll(async () => {
    await harness.close();
    jest.useRealTimers();
  });

  it('measures its patience for real I/O in real time (Jest freezes process.hrtime): a handler waiting in vain times out', async () => {
    const { messageId } = harness.publish('harness.fake', 'stuck', {});
    await harness.settle();
    expect(harness.attempts(messageId).map((a) => [a.at, a.outcome])).toEqual([[0, 'parked']]);
  }, 15_000);
});

describe('the test harness with Jest fake timers turned on after the start', () => {
  let harness: RetryHarness;

  beforeAll(async () => {
    harness = await RetryHarness.start(FlakyModule);
  });
  afterAll(async () => {
    await harness.close();
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('settle and advance fail at once, naming the fix, instead of waiting for timers that never run', async () => {
    jest.useFakeTimers();
    harness.publish('harness.fake', 'flaky', {});
    await expect(harness.settle()).rejects.toThrow(/jest\.useFakeTimers\(\) before RetryHarness\.start, or not at all/);
    await expect(harness.advance('1s')).rejects.toThrow(/harness\.advance\(\)/);
  });

  it('works again once the real timers are back (the harness clock, which Jest saved)', async () => {
    await harness.settle();
    expect(harness.attempts().map((a) => a.outcome)).toEqual(['retried', 'handled']);
  });
});
