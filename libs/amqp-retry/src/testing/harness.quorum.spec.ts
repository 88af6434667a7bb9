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

/** The first attempt of 'A' fails; 'B' holds the only delivery (prefetch 1) for an hour, while 'C' and 'D' fill the queue. */
@Injectable()
class BusyHandler {
  readonly seen: string[] = [];

  @RetryWithBackoff({
    queue: 'harness.busy',
    exchange: 'harness.full',
    routingKey: 'job',
    delays: ['1s'],
    maxAttempts: 3,
    queueType: 'quorum',
    maxLength: 1,
    overflow: 'reject-publish',
    prefetch: 1,
  })
  async run(body: { n: string }, ctx: RetryContext): Promise<void> {
    this.seen.push(`${body.n}#${ctx.attempt}`);
    if (body.n === 'A' && ctx.attempt === 1) throw new Error('boom');
    if (body.n === 'B') await new Promise((resolve) => setTimeout(resolve, 3_600_000));
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [BusyHandler] })
class BusyModule {}

describe('the test harness: a retry coming back to a full quorum queue', () => {
  let harness: RetryHarness;

  beforeAll(async () => {
    harness = await RetryHarness.start(BusyModule);
  });
  afterAll(async () => {
    await harness.close();
  });

  it('waits in its tier (at-least-once dead-lettering) and comes back once the queue has room, as RabbitMQ tries it again', async () => {
    const a = harness.publish('harness.full', 'job', { n: 'A' });
    await harness.advance(10);
    harness.publish('harness.full', 'job', { n: 'B' });
    await harness.advance(10);
    // A quorum queue takes one message past its limit: both wait.
    expect([harness.publish('harness.full', 'job', { n: 'C' }).queues, harness.publish('harness.full', 'job', { n: 'D' }).queues]).toEqual([
      ['harness.busy'],
      ['harness.busy'],
    ]);
    await harness.settle({ within: '1d' });
    const attempts = harness.attempts(a.messageId);
    expect(attempts.map((attempt) => attempt.outcome)).toEqual(['retried', 'handled']);
    expect(attempts[1].at).toBeGreaterThan(3_600_000);
    expect(harness.application.get(BusyHandler).seen).toEqual(['A#1', 'B#1', 'C#1', 'D#1', 'A#2']);
    expect(harness.parked('harness.busy')).toHaveLength(0);
  });
});

@Injectable()
class AlwaysFailing {
  @RetryWithBackoff({ queue: 'harness.count', exchange: 'harness.counted', routingKey: 'job', delays: ['1s'], maxAttempts: 3, queueType: 'quorum' })
  async run(): Promise<void> {
    throw new Error('boom');
  }
}

@Module({ imports: [RetryModule.forRoot({})], providers: [AlwaysFailing] })
class CountedModule {}

describe('the test harness: the delivery count a retried message carries into its quorum queue', () => {
  const deliveryCounts = async (brokerVersion: string) => {
    const harness = await RetryHarness.start(CountedModule, { brokerVersion });
    try {
      const { messageId } = harness.publish('harness.counted', 'job', { id: 1 });
      await harness.advance('5s');
      return harness.attempts(messageId).map((a) => [a.redelivered, a.headers['x-delivery-count']]);
    } finally {
      await harness.close();
    }
  };

  it("is kept through the tiers when the broker is 4.0 to 4.2, as 4.0.5's quorum queues keep it, and not when it is 4.3 or 3.10", async () => {
    for (const version of ['4.0.5', '4.2.0']) {
      expect(await deliveryCounts(version)).toEqual([
        [false, undefined],
        [true, 1],
        [true, 2],
      ]);
    }
    for (const version of ['4.3.6', '3.10.8']) {
      expect(await deliveryCounts(version)).toEqual([
        [false, undefined],
        [false, undefined],
        [false, undefined],
      ]);
    }
  });
});
