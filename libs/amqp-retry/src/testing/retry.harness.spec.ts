import { Injectable, Module } from '@nestjs/common';
import type { RetryContext } from '../core/delivery/retry.context.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

const calls: { id: number; attempt: number; at: number }[] = [];
let failUntil = 4;

@Injectable()
class PaymentHandler {
  @RetryWithBackoff({
    queue: 'harness.payments',
    exchange: 'harness.shop',
    routingKey: 'order.created',
    delays: ['1s', '1m', '10m', '30m', '1h'],
    maxAttempts: 6,
  })
  async charge(order: { id: number; kind?: string }, ctx: RetryContext): Promise<void> {
    calls.push({ id: order.id, attempt: ctx.attempt, at: Date.now() });
    if (order.kind === 'fatal') throw new NonRetryableError('card stolen');
    if (ctx.attempt < failUntil) throw new Error(`gateway down (${ctx.attempt})`);
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [PaymentHandler] })
class ShopModule {}

describe('the test harness on a module with a five-tier policy', () => {
  let harness: RetryHarness;

  beforeEach(async () => {
    calls.length = 0;
    failUntil = 4;
    harness = await RetryHarness.start(ShopModule);
  });

  afterEach(async () => {
    await harness.close();
  });

  it('retries through the tiers in virtual time and records every attempt', async () => {
    const started = process.hrtime.bigint();
    const { messageId } = harness.publish('harness.shop', 'order.created', { id: 1 });
    await harness.settle();
    const attempts = harness.attempts(messageId);
    expect(attempts.map((a) => [a.attempt, a.tier, a.outcome])).toEqual([
      [1, undefined, 'retried'],
      [2, 1, 'retried'],
      [3, 2, 'retried'],
      [4, 3, 'handled'],
    ]);
    expect(attempts.map((a) => a.at)).toEqual([0, 1000, 61_000, 661_000]);
    expect(harness.handled('harness.payments')).toHaveLength(1);
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1000);
  });

  it('parks a message whose tiers are exhausted, with the reason and headers', async () => {
    failUntil = 100;
    const { messageId } = harness.publish('harness.shop', 'order.created', { id: 2 });
    await harness.settle();
    expect(harness.attempts(messageId).map((a) => a.outcome)).toEqual(['retried', 'retried', 'retried', 'retried', 'retried', 'parked']);
    const [parked] = harness.parked('harness.payments');
    expect(parked.reason).toBe('exhausted');
    expect(parked.headers['x-retry-attempts']).toBe(6);
    expect(parked.body).toEqual({ id: 2 });
  });

  it('parks a non-retryable error at once and a malformed body unread', async () => {
    const fatal = harness.publish('harness.shop', 'order.created', { id: 3, kind: 'fatal' });
    const malformed = harness.publish('harness.shop', 'order.created', '{not json', { contentType: 'application/json' });
    await harness.settle();
    expect(harness.attempts(fatal.messageId).map((a) => a.parkReason)).toEqual(['non-retryable']);
    expect(harness.attempts(malformed.messageId).map((a) => [a.attempt, a.parkReason])).toEqual([[0, 'malformed']]);
    expect(
      harness
        .parked('harness.payments')
        .map((p) => p.reason)
        .sort(),
    ).toEqual(['malformed', 'non-retryable']);
  });

  it('delivers nothing before its time when advanced step by step', async () => {
    const { messageId } = harness.publish('harness.shop', 'order.created', { id: 4 });
    await harness.advance(999);
    expect(harness.attempts(messageId)).toHaveLength(1);
    await harness.advance(1);
    expect(harness.attempts(messageId)).toHaveLength(2);
  });
});
