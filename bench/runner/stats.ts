/** The median and the range of a few values (one per round). */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

const sorted = (values: readonly number[]) => [...values].sort((a, b) => a - b);

/** Nearest-rank percentile (p in 0..100) of a non-empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) throw new Error('percentile of no values');
  const s = sorted(values);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

export function spread(values: readonly number[]): Spread {
  if (values.length === 0) throw new Error('spread of no values');
  const s = sorted(values);
  const mid = s.length >> 1;
  return { median: s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2, min: s[0], max: s[s.length - 1] };
}

/** Messages per second over a measured window. */
export const throughputOf = (r: { messages: number; elapsedMs: number }) => (r.messages / r.elapsedMs) * 1000;

/** Microseconds of the process's CPU per message over a measured window. */
export const cpuPerMessageOf = (r: { messages: number; cpuUs: number }) => r.cpuUs / r.messages;

/** p50/p95/p99/max of each round's lateness, then their median and range over the rounds. */
export function latenessSpread(rounds: number[][]): { p50: Spread; p95: Spread; p99: Spread; max: Spread } {
  const at = (p: number) => spread(rounds.map((lateness) => percentile(lateness, p)));
  return { p50: at(50), p95: at(95), p99: at(99), max: at(100) };
}
