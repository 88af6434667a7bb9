import { reconnectDelay } from './reconnect.policy.js';

const policy = { initialDelayMs: 100, maxDelayMs: 30_000 };

describe('reconnectDelay', () => {
  it('doubles from the initial delay up to the cap, jitter at its top', () => {
    expect([1, 2, 3, 4, 5, 9, 10, 50, 10_000].map((a) => reconnectDelay(a, policy, () => 0.999999))).toEqual([
      100, 200, 400, 800, 1_600, 25_600, 30_000, 30_000, 30_000,
    ]);
  });

  it('takes away at most the jitter fraction', () => {
    expect(reconnectDelay(1, policy, () => 0)).toBe(80);
    expect(reconnectDelay(20, policy, () => 0)).toBe(24_000);
    expect(reconnectDelay(3, { ...policy, jitter: 0 }, () => 0.5)).toBe(400);
  });

  it('stays within [base * (1 - jitter), base] for any random draw', () => {
    for (let attempt = 1; attempt < 30; attempt++) {
      const base = Math.min(30_000, 100 * 2 ** (attempt - 1));
      for (const r of [0, 0.25, 0.5, 0.75, 0.999]) {
        const delay = reconnectDelay(attempt, policy, () => r);
        expect(delay).toBeGreaterThanOrEqual(Math.floor(base * 0.8));
        expect(delay).toBeLessThanOrEqual(base);
      }
    }
  });

  it('treats attempt 0 or less as the first', () => {
    expect(reconnectDelay(0, policy, () => 0.999999)).toBe(100);
  });
});
