import type { QueueCounts } from './api.types.js';

/** One reading of a queue's counts (handled, retried, parked since counting began) at a time. */
export interface Reading {
  at: number;
  counts: QueueCounts;
}

/** The rates between two readings, per minute, over the interval from the earlier one (`from`) to the later (`at`). */
export interface RatePoint {
  from: number;
  at: number;
  handled: number;
  retried: number;
  parked: number;
}

/** How far back the charts look. */
export const WINDOW_MS = 10 * 60_000;

/**
 * The readings kept after a new one: those within `windowMs` of it, the new one last. A reading no later than the
 * last one (a clock step back) replaces nothing and is dropped.
 */
export function addReading(readings: readonly Reading[], next: Reading, windowMs = WINDOW_MS): Reading[] {
  const last = readings[readings.length - 1];
  if (last && next.at <= last.at) return [...readings];
  return [...readings, next].filter((reading) => reading.at >= next.at - windowMs);
}

/**
 * Rates per minute between successive readings. A count that went down (the application restarted, its counts began
 * again from 0) gives that interval the new count itself, never a negative rate.
 */
export function ratesPerMinute(readings: readonly Reading[]): RatePoint[] {
  const points: RatePoint[] = [];
  for (let i = 1; i < readings.length; i++) {
    const before = readings[i - 1];
    const after = readings[i];
    const minutes = (after.at - before.at) / 60_000;
    const rate = (key: keyof QueueCounts) => {
      const delta = after.counts[key] - before.counts[key];
      return (delta < 0 ? after.counts[key] : delta) / minutes;
    };
    points.push({ from: before.at, at: after.at, handled: rate('handled'), retried: rate('retried'), parked: rate('parked') });
  }
  return points;
}

/**
 * The rate over the whole series, per minute (what changed from the first reading to the last, restarts counted as
 * in ratesPerMinute); undefined with fewer than two readings.
 */
export function averageRate(readings: readonly Reading[], key: keyof QueueCounts): number | undefined {
  if (readings.length < 2) return undefined;
  const points = ratesPerMinute(readings);
  let events = 0;
  for (let i = 0; i < points.length; i++) events += (points[i][key] * (readings[i + 1].at - readings[i].at)) / 60_000;
  return events / ((readings[readings.length - 1].at - readings[0].at) / 60_000);
}

/**
 * The points of an SVG polyline drawing each interval's rate as a step (a level segment across the interval) in a
 * `width` x `height` box: the time the readings span (at most the window) on the x axis, the newest at the right edge, 0 at the bottom; the highest
 * rate touches the top (a flat line of zeros lies on the bottom). Empty without an interval.
 */
export function sparkPoints(
  points: readonly { from: number; at: number; value: number }[],
  width: number,
  height: number,
  windowMs = WINDOW_MS,
): string {
  if (points.length === 0) return '';
  const newest = points[points.length - 1].at;
  // The x axis spans the readings there are, up to the window: a page open for a minute fills its charts.
  const span = Math.min(windowMs, Math.max(1, newest - points[0].from));
  const max = Math.max(...points.map((p) => p.value), 0);
  const x = (at: number) => Math.max(0, width - ((newest - at) / span) * width);
  const y = (value: number) => (max === 0 ? height : height - (value / max) * height);
  return points.flatMap((p) => [`${round(x(p.from))},${round(y(p.value))}`, `${round(x(p.at))},${round(y(p.value))}`]).join(' ');
}

const round = (n: number) => Math.round(n * 10) / 10;
