import { Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { setTimeout as realSetTimeout } from 'node:timers';
import type { RetryContext } from '../core/delivery/retry.context.js';
import { RetryWithBackoff } from '../nest/retry-with-backoff.decorator.js';
import { RetryModule } from '../nest/retry.module.js';
import { RetryHarness } from './retry.harness.js';

/**
 * Real I/O the virtual clock knows nothing of: `node:timers`' own `setTimeout`, which the clock leaves alone (it
 * stands in for the global one and for `node:timers/promises`).
 */
const realDelay = (ms: number) => new Promise((resolve) => realSetTimeout(resolve, ms));

/** Virtual time each attempt saw pass while it waited for real I/O. */
const spent: number[] = [];

@Injectable()
class DatabaseHandler {
  @RetryWithBackoff({ queue: 'harness.io', exchange: 'harness.db', routingKey: 'row', delays: ['1s'], maxAttempts: 2, timeout: '30s' })
  async save(body: { ms: number }, _ctx: RetryContext): Promise<void> {
    const started = Date.now();
    await realDelay(body.ms);
    spent.push(Date.now() - started);
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [DatabaseHandler] })
class DatabaseModule {}

/** A timer of the application's own, set outside every delivery, as a cache refresher or `@nestjs/schedule` sets one. */
@Injectable()
class CacheRefresher implements OnModuleInit, OnModuleDestroy {
  private timer?: ReturnType<typeof setInterval>;
  onModuleInit(): void {
    this.timer = setInterval(() => undefined, 60_000);
  }
  onModuleDestroy(): void {
    clearInterval(this.timer);
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [DatabaseHandler, CacheRefresher] })
class RefreshedModule {}

/** Attempt 1 waits for something real that never comes (its timeout ends it); attempt 2 waits 300 ms of real I/O. */
@Injectable()
class StuckThenSlowHandler {
  @RetryWithBackoff({ queue: 'harness.stuck', exchange: 'harness.db', routingKey: 'stuck', delays: ['1s'], maxAttempts: 3, timeout: '30s' })
  async save(_body: unknown, ctx: RetryContext): Promise<void> {
    if (ctx.attempt === 1) await new Promise(() => undefined);
    await realDelay(300);
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [StuckThenSlowHandler] })
class StuckModule {}

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

describe('the test harness, real I/O and a timer of the application set outside any delivery', () => {
  let harness: RetryHarness;

  beforeEach(async () => {
    spent.length = 0;
    harness = await RetryHarness.start(RefreshedModule);
  });
  afterEach(async () => {
    await harness.close();
  });

  it('settle waits for the handler in real time: the interval does not move the clock to its timeout', async () => {
    const { messageId } = harness.publish('harness.db', 'row', { ms: 300 });
    await harness.settle();
    expect(harness.attempts(messageId).map((a) => a.outcome)).toEqual(['handled']);
    expect(spent).toEqual([0]);
  });

  it('advance waits for it too, and then runs the interval', async () => {
    const { messageId } = harness.publish('harness.db', 'row', { ms: 300 });
    await harness.advance('2m');
    expect(harness.attempts(messageId).map((a) => a.outcome)).toEqual(['handled']);
    expect(spent).toEqual([0]);
    expect(harness.elapsed).toBe(120_000);
  });
});

describe('the test harness: patience for real I/O, delivery by delivery', () => {
  let harness: RetryHarness;

  beforeAll(async () => {
    harness = await RetryHarness.start(StuckModule);
  });
  afterAll(async () => {
    await harness.close();
  });

  it('a handler that waits in vain uses up its own patience only: the next attempt in the same settle is waited for', async () => {
    const { messageId } = harness.publish('harness.db', 'stuck', {});
    await harness.settle();
    const attempts = harness.attempts(messageId).map((a) => [a.attempt, a.at, a.outcome]);
    expect(attempts).toEqual([
      [1, 0, 'retried'],
      [2, 31_000, 'handled'],
    ]);
  }, 20_000);
});
