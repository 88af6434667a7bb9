/** Upper bounds (ms) of the heartbeat's duration buckets, plus one past them: fixed, so that instances' counts add up. */
export const LATENCY_BOUNDS_MS: readonly number[] = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000,
];

/** Buckets per histogram: one per bound and one past the last. */
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length + 1;

/** The bucket of a duration: the first whose bound is at least `ms` (a short linear scan; no allocation). */
export function latencyBucket(ms: number): number {
  for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) if (ms <= LATENCY_BOUNDS_MS[i]) return i;
  return LATENCY_BOUNDS_MS.length;
}

/** The `q` quantile (0 < q <= 1) of counts per bucket as its bucket's upper bound (the last: its lower); undefined if empty. */
export function latencyQuantile(counts: ArrayLike<number>, q: number): number | undefined {
  const all = Array.from(counts);
  const total = all.reduce((sum, n) => sum + n, 0);
  if (total === 0) return undefined;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  const bucket = all.findIndex((n) => (seen += n) >= rank);
  return LATENCY_BOUNDS_MS[bucket === -1 ? LATENCY_BOUNDS_MS.length - 1 : Math.min(bucket, LATENCY_BOUNDS_MS.length - 1)];
}
