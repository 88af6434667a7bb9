import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { jest } from '@jest/globals';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryPublisher } from '../nest/retry.publisher.js';
import { RetryHarness } from './retry.harness.js';

/** The guide's example (docs/testing-your-handlers.md), word for word where it can be, with Jest's fake timers on. */
@Injectable()
class PaymentGateway {
  async charge(_order: unknown): Promise<void> {
    throw new Error('the real gateway is not called in a unit test');
  }
}

@Injectable()
class PaymentHandler {
  constructor(private readonly gateway: PaymentGateway) {}

  @RetryWithBackoff({ queue: 'payments', exchange: 'shop', routingKey: 'order.created', delays: ['1s', '10s', '1m'], maxAttempts: 5 })
  async onOrder(order: { id: number }): Promise<void> {
    await this.gateway.charge(order);
  }

  @RetryWithBackoff({ queue: 'reminders', exchange: 'shop', routingKey: 'reminder.due' })
  onReminder(): void {}
}

@Module({ imports: [RetryModule.forRoot({})], providers: [PaymentGateway, PaymentHandler] })
class AppModule {}

describe('the testing guide, with Jest fake timers on', () => {
  const gateway = { charge: jest.fn<(order: unknown) => Promise<void>>() };
  let harness: RetryHarness;

  beforeAll(async () => {
    jest.useFakeTimers();
    harness = await RetryHarness.start(
      Test.createTestingModule({ imports: [AppModule] })
        .overrideProvider(PaymentGateway)
        .useValue(gateway),
    );
  });
  afterAll(async () => {
    await harness.close();
    jest.useRealTimers();
  });

  it('retries a failed payment three times; the fourth attempt succeeds', async () => {
    gateway.charge
      .mockRejectedValueOnce(new Error('timeout'))
      .mockRejectedValueOnce(new Error('timeout'))
      .mockRejectedValueOnce(new Error('timeout'))
      .mockResolvedValue(undefined);
    const { messageId } = harness.publish('shop', 'order.created', { id: 42, amountCents: 1000 });
    const real = process.hrtime.bigint();

    await harness.settle();

    expect(harness.attempts(messageId).map((a) => [a.attempt, a.at, a.tier, a.outcome])).toEqual([
      [1, 0, undefined, 'retried'],
      [2, 1_000, 1, 'retried'],
      [3, 11_000, 2, 'retried'],
      [4, 71_000, 3, 'handled'],
    ]);
    expect(Number(process.hrtime.bigint() - real) / 1e6).toBeLessThan(1_000);
  });

  it('parks a malformed order at once', async () => {
    harness.publish('shop', 'order.created', '{not json', { contentType: 'application/json', messageId: 'bad-1' });
    await harness.settle();
    expect(harness.parked('payments')).toContainEqual(expect.objectContaining({ messageId: 'bad-1', reason: 'malformed' }));
  });

  it('delivers the reminder after 30 minutes, not before', async () => {
    await harness.application.get(RetryPublisher).publish('shop', 'reminder.due', { id: 42 }, { delay: '30m' });
    await harness.advance('29m59s');
    expect(harness.handled('reminders')).toHaveLength(0);
    await harness.advance('1s');
    expect(harness.handled('reminders')).toHaveLength(1);
  });

  it('reports a nacked confirm to the publisher, and reconnects after a lost connection', async () => {
    harness.failures.refuseConfirms(1, { routingKey: 'reminder.due' });
    await expect(harness.application.get(RetryPublisher).publish('shop', 'reminder.due', { id: 43 })).rejects.toThrow();
    expect(harness.published({ routingKey: 'reminder.due' }).at(-1)?.confirmed).toBe(false);

    harness.failures.loseConnections(5_000);
    await harness.advance('1m');
    const { messageId } = harness.publish('shop', 'order.created', { id: 44 });
    await harness.settle();
    expect(harness.attempts(messageId).map((a) => a.outcome)).toEqual(['handled']);
  });
});
