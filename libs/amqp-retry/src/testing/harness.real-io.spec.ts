import { Injectable, Module } from '@nestjs/common';
import { setTimeout as realDelay } from 'node:timers/promises';
import type { RetryContext } from '../core/delivery/retry.context.js';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

/** Virtual time each attempt saw pass while it waited for real I/O. */
const spent: number[] = [];

@Injectable()
class DatabaseHandler {
  // `node:timers/promises` is not the global setTimeout: it stands for I/O the virtual clock knows nothing of.
  @RetryWithBackoff({ queue: 'harness.io', exchange: 'harness.db', routingKey: 'row', delays: ['1s'], maxAttempts: 2, timeout: '30s' })
  async save(body: { ms: number }, _ctx: RetryContext): Promise<void> {
    const started = Date.now();
    await realDelay(body.ms);
    spent.push(Date.now() - started);
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [DatabaseHandler] })
class DatabaseModule {}

describe('the test harness and a handler that waits for real I/O', () => {
  let harness: RetryHarness;

  beforeEach(async () => {
    spent.length = 0;
    harness = await RetryHarness.start(DatabaseModule);
  });
  afterEach(async () => {
    await harness.close();
  });

  it('settle waits for it in real time: no timer of the application runs meanwhile, its timeout does not fire', async () => {
    const { messageId } = harness.publish('harness.db', 'row', { ms: 300 });
    await harness.settle();
    expect(harness.attempts(messageId).map((a) => a.outcome)).toEqual(['handled']);
    expect(spent).toEqual([0]);
    expect(harness.elapsed).toBe(0);
  });

  it('advance waits for it too, before any timer runs and before it returns: the attempt has ended', async () => {
    const { messageId } = harness.publish('harness.db', 'row', { ms: 300 });
    await harness.advance('1s');
    expect(harness.attempts(messageId).map((a) => a.outcome)).toEqual(['handled']);
    expect(spent).toEqual([0]);
    expect(harness.elapsed).toBe(1_000);
  });
});
