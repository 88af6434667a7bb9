/**
 * Deterministic pseudo-random numbers (mulberry32) for property-style unit tests, so a failing case can be replayed
 * from its seed. Test support only: not built into the package (tsconfig.lib.json leaves `src/testing/*.fixture.ts` out).
 */
export function seededRandom(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
