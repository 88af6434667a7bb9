import { Injectable, Module } from '@nestjs/common';
import type { RetryContext } from '../core/delivery/retry.context.js';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

@Injectable()
class SlowHandler {
  @RetryWithBackoff({ queue: 'harness.slow', exchange: 'harness.work', routingKey: 'job', delays: ['1s'], maxAttempts: 3, queueType: 'quorum' })
  async run(_body: unknown, ctx: RetryContext): Promise<void> {
    if (!ctx.message.fields.redelivered) await new Promise((resolve) => setTimeout(resolve, 10_000));
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [SlowHandler] })
class WorkModule {}

describe('the test harness: a quorum queue and a lost connection', () => {
  let harness: RetryHarness;

  beforeAll(async () => {
    harness = await RetryHarness.start(WorkModule);
  });
  afterAll(async () => {
    await harness.close();
  });

  it('redelivers what was in flight, marked redelivered and counted in x-delivery-count', async () => {
    const { messageId } = harness.publish('harness.work', 'job', { id: 1 });
    await harness.advance('1s');
    harness.failures.loseConnections();
    await harness.settle();
    const attempts = harness.attempts(messageId);
    const again = attempts.find((a) => a.redelivered);
    expect(again?.headers['x-delivery-count']).toBe(1);
    expect(attempts.some((a) => a.outcome === 'handled')).toBe(true);
  });
});
