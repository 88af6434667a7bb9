import { Injectable, Module } from '@nestjs/common';
import { connectBroker, replaceBrokerConnect } from '../amqp/broker.connector.js';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

@Injectable()
class QuietHandler {
  @RetryWithBackoff({ queue: 'harness.overlap', exchange: 'harness.x', routingKey: 'k', delays: ['1s'] })
  async handle(): Promise<void> {}
}

@Module({ imports: [RetryModule.forRoot({})], providers: [QuietHandler] })
class QuietModule {}

describe('one test harness at a time in a process', () => {
  it('refuses a second start while one runs, and starts again once it is closed', async () => {
    const realSetTimeout = globalThis.setTimeout;
    const first = await RetryHarness.start(QuietModule);
    try {
      await expect(RetryHarness.start(QuietModule)).rejects.toThrow('a RetryHarness is already running in this process: await harness.close() first');
      const { queues } = first.publish('harness.x', 'k', {});
      expect(queues).toEqual(['harness.overlap']); // the running one is untouched
    } finally {
      await first.close();
    }
    expect(globalThis.setTimeout).toBe(realSetTimeout);
    const second = await RetryHarness.start(QuietModule);
    await second.close();
    expect(globalThis.setTimeout).toBe(realSetTimeout);
  });

  it('close() puts back only what it set: a global or a connect stand-in replaced since is left to what replaced it', async () => {
    const RealDate = globalThis.Date;
    const harness = await RetryHarness.start(QuietModule);
    const otherDate = Object.assign(() => 'another clock', { now: () => 1 });
    const otherConnect = async () => Promise.reject(new Error('another stand-in'));
    Object.defineProperty(globalThis, 'Date', { value: otherDate, writable: true, configurable: true });
    replaceBrokerConnect(otherConnect);
    try {
      await harness.close();
      expect(globalThis.Date).toBe(otherDate);
      await expect(connectBroker('amqp://127.0.0.1:1')).rejects.toThrow('another stand-in');
    } finally {
      Object.defineProperty(globalThis, 'Date', { value: RealDate, writable: true, configurable: true });
      replaceBrokerConnect(undefined);
    }
    expect((globalThis.setTimeout as unknown as Record<symbol, unknown>)[Symbol.for('nestjs-amqp-retry.virtual-clock')]).toBeUndefined();
  });
});
