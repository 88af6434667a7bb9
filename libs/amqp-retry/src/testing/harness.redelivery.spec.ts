import { Injectable, Module } from '@nestjs/common';
import type { RetryContext } from '../core/delivery/retry.context.js';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

@Injectable()
class SlowSecondTry {
  @RetryWithBackoff({ queue: 'harness.redelivery', exchange: 'harness.rd', routingKey: 'k', delays: ['1s'], maxAttempts: 3 })
  async handle(_body: unknown, ctx: RetryContext): Promise<void> {
    if (ctx.attempt === 1) throw new Error('first');
    if (!ctx.message.fields.redelivered) await new Promise((resolve) => setTimeout(resolve, 10_000));
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [SlowSecondTry] })
class RedeliveryModule {}

describe('the test harness: an attempt under way when the connection is lost', () => {
  let harness: RetryHarness;

  beforeAll(async () => {
    harness = await RetryHarness.start(RedeliveryModule);
  });
  afterAll(async () => {
    await harness.close();
  });

  it('ends interrupted; its redelivery keeps the attempt number and the tier it waited in', async () => {
    const { messageId } = harness.publish('harness.rd', 'k', {});
    await harness.advance('2s');
    harness.failures.loseConnections();
    await harness.settle();
    expect(harness.attempts(messageId).map((a) => [a.attempt, a.tier, a.outcome, a.redelivered])).toEqual([
      [1, undefined, 'retried', false],
      [2, 1, 'interrupted', false],
      [2, 1, 'handled', true],
    ]);
  });
});
