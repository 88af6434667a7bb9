import { readRateLimit } from './breaker.config.js';
import { TokenBucket } from './token.bucket.js';

const limit = (calls: number, per: string, burst = calls) => readRateLimit({ calls, per, burst }, (k) => k)!;

describe('TokenBucket', () => {
  it('lets a burst of `calls` through at once, then one call per period / calls', () => {
    const bucket = new TokenBucket(limit(5, '1s'), 0);
    expect(Array.from({ length: 5 }, () => bucket.take(0))).toEqual([0, 0, 0, 0, 0]);
    expect(bucket.take(0)).toBe(200);
    expect(bucket.take(150)).toBe(50);
    expect(bucket.take(200)).toBe(0);
    expect(bucket.take(200)).toBe(200);
  });

  it('never holds more than `calls` tokens after a long idle time', () => {
    const bucket = new TokenBucket(limit(3, '1m'), 0);
    for (let i = 0; i < 3; i++) bucket.take(0);
    const after = (now: number) => Array.from({ length: 4 }, () => bucket.take(now));
    expect(after(3_600_000)).toEqual([0, 0, 0, 20_000]);
  });

  it('refills nothing when the clock goes back, and counts on from there', () => {
    const bucket = new TokenBucket(limit(1, '1s'), 10_000);
    expect(bucket.take(10_000)).toBe(0);
    expect(bucket.take(5_000)).toBe(1_000);
    expect(bucket.take(6_000)).toBe(0);
  });

  it('with a burst of 1 (the default up to 100 calls a second), spaces calls evenly: never more than `calls` in any stretch of `per`', () => {
    const bucket = new TokenBucket(
      readRateLimit({ calls: 5, per: '1s' }, (k) => k)!,
      0,
    );
    const at: number[] = [];
    let now = 0;
    while (at.length < 20) {
      const wait = bucket.take(now);
      if (wait === 0) at.push(now);
      else now += wait;
    }
    expect(at.slice(0, 6)).toEqual([0, 200, 400, 600, 800, 1_000]);
    for (const start of at) expect(at.filter((t) => t >= start && t < start + 1_000).length).toBeLessThanOrEqual(5);
  });

  it('keeps N calls over any stretch of time within calls + N * per / calls', () => {
    const bucket = new TokenBucket(limit(10, '100ms'), 0);
    let now = 0;
    let taken = 0;
    while (now < 10_000) {
      const wait = bucket.take(now);
      if (wait === 0) taken++;
      else now += wait;
    }
    expect(taken).toBeGreaterThanOrEqual(1_000);
    expect(taken).toBeLessThanOrEqual(1_010);
  });
});
