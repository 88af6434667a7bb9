import { Injectable, Module } from '@nestjs/common';
import type { ClaimResult, IdempotencyStore } from '../core/idempotency/idempotency.store.js';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

/** An idempotency store in memory, as a test would write one (claims and handled keys, TTLs ignored). */
class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly claims = new Map<string, string>();
  private readonly handled = new Set<string>();
  async claim(key: string, token: string): Promise<ClaimResult> {
    if (this.handled.has(key)) return 'handled';
    if (this.claims.has(key) && this.claims.get(key) !== token) return 'busy';
    this.claims.set(key, token);
    return 'claimed';
  }
  async renew(key: string, token: string): Promise<boolean> {
    return this.claims.get(key) === token;
  }
  async release(key: string, token: string): Promise<void> {
    if (this.claims.get(key) === token) this.claims.delete(key);
  }
  async markHandled(key: string): Promise<void> {
    this.handled.add(key);
    this.claims.delete(key);
  }
}

const charged: number[] = [];

@Injectable()
class ChargeHandler {
  @RetryWithBackoff({ queue: 'harness.charges', exchange: 'harness.pay', routingKey: 'charge', delays: ['1s'], maxAttempts: 3 })
  charge(body: { id: number }): void {
    charged.push(body.id);
  }
}

@Module({ imports: [RetryModule.forRoot({ idempotency: { store: new MemoryIdempotencyStore() } })], providers: [ChargeHandler] })
class PayModule {}

describe('the test harness with idempotency', () => {
  let harness: RetryHarness;

  beforeAll(async () => {
    harness = await RetryHarness.start(PayModule);
  });
  afterAll(async () => {
    await harness.close();
  });

  it('runs the handler once for two copies of one message id', async () => {
    harness.publish('harness.pay', 'charge', { id: 1 }, { messageId: 'charge-1' });
    await harness.settle();
    harness.publish('harness.pay', 'charge', { id: 1 }, { messageId: 'charge-1' });
    await harness.settle();
    expect(charged).toEqual([1]);
    expect(harness.queue('harness.charges')).toMatchObject({ messages: 0, unacknowledged: 0 });
  });
});
