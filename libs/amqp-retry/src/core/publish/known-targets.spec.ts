import { describe, expect, it } from '@jest/globals';
import { KnownTargets } from './known-targets.js';

describe('KnownTargets', () => {
  it('knows a target found for holdMs, then asks again', () => {
    const known = new KnownTargets(5_000);
    expect(known.has('exchange orders', 0)).toBe(false);
    known.found('exchange orders', 1_000);
    expect(known.has('exchange orders', 5_999)).toBe(true);
    expect(known.has('exchange orders', 6_000)).toBe(false);
  });

  it('keeps at most max names: the expired go first, then the oldest', () => {
    const known = new KnownTargets(100, 3);
    known.found('a', 0);
    known.found('b', 50);
    known.found('c', 60);
    known.found('d', 120); // a expired
    expect(['a', 'b', 'c', 'd'].map((n) => known.has(n, 121))).toEqual([false, true, true, true]);
    known.found('e', 121); // none expired: b, the oldest, goes
    expect(['b', 'c', 'd', 'e'].map((n) => known.has(n, 122))).toEqual([false, true, true, true]);
  });
});
