import type { Spread } from '../runner/stats.js';

export const int = (n: number) => Math.round(n).toLocaleString('en-US');
export const fixed = (n: number, digits = 1) => n.toFixed(digits);
export const mb = (bytes: number) => bytes / 1024 / 1024;

/** "17,100 (15,900–18,200)": median, then the range over rounds (omitted for a single round). */
export function spreadText(s: Spread, show: (n: number) => string = int): string {
  return s.min === s.max ? show(s.median) : `${show(s.median)} (${show(s.min)}–${show(s.max)})`;
}
