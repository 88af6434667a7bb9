import type { ConsumeMessage } from 'amqplib';
import { HeartbeatCollector } from './heartbeat.collector.js';
import { publishedAt } from '../../message/message.properties.js';
import { LATENCY_BUCKETS, latencyBucket, latencyQuantile } from './latency.histogram.js';

const message = (timestamp?: number) => ({ properties: { timestamp }, fields: {}, content: Buffer.alloc(0) }) as unknown as ConsumeMessage;

describe('HeartbeatCollector', () => {
  it('counts outcomes and times per queue between two drains, then starts again from zero', () => {
    let now = 1_700_000_010_000;
    const collector = new HeartbeatCollector(() => now);
    collector.countHandled('orders', 3, message(1_700_000_000)); // published 10 s before (seconds, as AMQP says)
    collector.countHandled('orders', 40, message()); // no timestamp: no critical time
    collector.countFailed('orders', 7, new Error('x'), true);
    collector.countFailed('orders', 7, new Error('x'), false); // parks: its parked event follows
    collector.parked({
      queue: 'orders',
      errorQueue: 'orders.error',
      reason: 'exhausted',
      error: new Error('x'),
      handlerCalls: 3,
      message: message(),
    });
    const first = collector.drain('orders');
    expect(first).toMatchObject({ handled: 2, retried: 1, parked: 1, failed: 2 });
    expect(first.processing.reduce((a, b) => a + b)).toBe(4);
    expect(first.critical[latencyBucket(10_000)]).toBe(1);
    expect(first.critical.reduce((a, b) => a + b)).toBe(1);
    now += 1;
    expect(collector.drain('orders')).toMatchObject({ handled: 0, retried: 0, parked: 0, failed: 0 });
    expect(collector.drain('never-seen').processing).toHaveLength(LATENCY_BUCKETS);
  });

  it("keeps an open breaker's first cause and counts its failed trials until it closes", () => {
    let now = 1_000;
    const collector = new HeartbeatCollector(() => now);
    collector.countFailed('orders', 7, new Error('connect ECONNREFUSED amqp://bob:secret@10.0.0.7'), true);
    collector.queueStateChanged({ queue: 'orders', from: 'running', to: 'open', reason: '5 of 10 calls failed' });
    now = 2_000;
    collector.queueStateChanged({ queue: 'orders', from: 'open', to: 'half-open', reason: 'trial' });
    collector.queueStateChanged({ queue: 'orders', from: 'half-open', to: 'open', reason: 'the trial failed' });
    expect(collector.causeOf('orders', 9_000)).toEqual({
      reason: '5 of 10 calls failed',
      error: expect.stringMatching(/^connect ECONNREFUSED amqp:\/\/bob:\*+@10\.0\.0\.7$/),
      openedAt: 1_000,
      failedTrials: 1,
      nextTrialAt: 9_000,
    });
    collector.queueStateChanged({ queue: 'orders', from: 'half-open', to: 'running', reason: 'closed' });
    expect(collector.causeOf('orders')).toBeUndefined();
  });

  it('names the failure the breaker counted before its opening, though no failure was settled and counted yet', () => {
    const collector = new HeartbeatCollector(() => 5_000);
    collector.outageCounted('payments', new Error('connect ECONNREFUSED 10.0.0.7:443'));
    collector.queueStateChanged({ queue: 'payments', from: 'running', to: 'open', reason: '3 calls in a row failed' });
    expect(collector.causeOf('payments')).toEqual({
      reason: '3 calls in a row failed',
      error: 'connect ECONNREFUSED 10.0.0.7:443',
      openedAt: 5_000,
      failedTrials: 0,
    });
    expect(collector.drain('payments')).toMatchObject({ failed: 0 }); // told, not counted: countFailed counts it
  });

  it('reads a publish timestamp in seconds, or in milliseconds when too large for seconds', () => {
    expect(publishedAt(1_700_000_000)).toBe(1_700_000_000_000);
    expect(publishedAt(1_700_000_000_123)).toBe(1_700_000_000_123);
    expect(publishedAt(undefined)).toBeUndefined();
    expect(publishedAt(0)).toBeUndefined();
  });
});

describe('Latency histogram', () => {
  it('puts a duration in the first bucket whose bound holds it, and reads quantiles as bucket bounds', () => {
    expect(latencyBucket(0)).toBe(0);
    expect(latencyBucket(1)).toBe(0);
    expect(latencyBucket(1.5)).toBe(1);
    expect(latencyBucket(10_000_000)).toBe(LATENCY_BUCKETS - 1);
    const counts = new Array<number>(LATENCY_BUCKETS).fill(0);
    expect(latencyQuantile(counts, 0.5)).toBeUndefined();
    counts[latencyBucket(8)] = 90; // 90 calls of up to 10 ms
    counts[latencyBucket(800)] = 10; // 10 of up to 1 s
    expect(latencyQuantile(counts, 0.5)).toBe(10);
    expect(latencyQuantile(counts, 0.95)).toBe(1_000);
  });
});
