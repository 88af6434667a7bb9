import { Injectable, Module } from '@nestjs/common';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryPublisher } from '../nest/retry.publisher.js';
import { RetryHarness } from './retry.harness.js';

@Injectable()
class ReminderHandler {
  @RetryWithBackoff({ queue: 'harness.reminders', exchange: 'harness.r', routingKey: 'due' })
  remind(): void {}
}

@Module({ imports: [RetryModule.forRoot({})], providers: [ReminderHandler] })
class ReminderModule {}

describe('the test harness: a refused publisher confirm', () => {
  let harness: RetryHarness;

  beforeEach(async () => {
    harness = await RetryHarness.start(ReminderModule);
  });
  afterEach(async () => {
    await harness.close();
  });

  it('is a nack of a message the broker did not take: no queue gets it, no handler runs', async () => {
    harness.failures.refuseConfirms(1, { routingKey: 'due' });
    await expect(harness.application.get(RetryPublisher).publish('harness.r', 'due', { id: 1 })).rejects.toThrow();
    await harness.settle();
    expect(harness.handled('harness.reminders')).toEqual([]);
    expect(harness.queue('harness.reminders')?.messages).toBe(0);
    expect(harness.published({ routingKey: 'due', by: 'application' }).map((p) => [p.queues, p.confirmed, p.returned])).toEqual([[[], false, false]]);
  });

  it('leaves the next publish alone: it is routed and handled', async () => {
    harness.failures.refuseConfirms(1, { routingKey: 'due' });
    const publisher = harness.application.get(RetryPublisher);
    await publisher.publish('harness.r', 'due', { id: 1 }).catch(() => undefined);
    await publisher.publish('harness.r', 'due', { id: 2 });
    await harness.settle();
    expect(harness.handled('harness.reminders').map((h) => h.body)).toEqual([{ id: 2 }]);
  });
});
