/**
 * A length of time: milliseconds as a number, or a number with a unit.
 * @example 1500, '250ms', '5s', '1.5m', '2h', '3d'
 */
export type Duration = number | string;

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION_PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;

/**
 * The longest TTL RabbitMQ takes, 2^32-1 ms (about 49.7 days): `x-message-ttl` is an unsigned 32-bit count of ms,
 * and the broker's expiry timers (`erlang:send_after`) stop there. Also the longest time limit the library takes.
 */
export const MAX_TTL_MS = 2 ** 32 - 1;

/** What a valid duration looks like, for error messages. */
export const DURATION_HINT = "milliseconds (1500) or a number with a unit: '250ms', '5s', '2m', '1h', '3d'";

/** A duration in whole milliseconds, rounded up (a delay is never shorter than asked); undefined unless finite and non-negative. */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') {
    return Number.isFinite(value) && value >= 0 ? Math.ceil(value) : undefined;
  }
  if (typeof value !== 'string') return undefined;
  const match = DURATION_PATTERN.exec(value.trim());
  if (!match) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2] ?? 'ms'];
  return Number.isFinite(ms) ? Math.ceil(ms) : undefined;
}

/** A duration read against a range: its milliseconds, or what is wrong with it. */
export type DurationReading =
  { ok: true; ms: number } | { ok: false; problem: 'not-a-duration' } | { ok: false; problem: 'below' | 'above'; ms: number };

/** The library's one duration reader: `value` (see parseDuration) checked against [min, max]; callers word their own errors. */
export function readDurationWithin(value: unknown, min: number, max: number): DurationReading {
  const ms = parseDuration(value);
  if (ms === undefined) return { ok: false, problem: 'not-a-duration' };
  if (ms < min) return { ok: false, problem: 'below', ms };
  if (ms > max) return { ok: false, problem: 'above', ms };
  return { ok: true, ms };
}

/** The units a duration is spelled in, largest first (milliseconds, the first of UNIT_MS, are the fallback). */
const UNITS_LARGEST_FIRST = Object.entries(UNIT_MS).slice(1).reverse();

/** The shortest exact spelling of a number of milliseconds, for logs and names: 1000 -> '1s', 90000 -> '90s'. */
export function formatDuration(ms: number): string {
  const [unit, size] = UNITS_LARGEST_FIRST.find(([, each]) => ms >= each && ms % each === 0) ?? ['ms', 1];
  return `${ms / size}${unit}`;
}

/** The longest whole-unit spelling not above `ms`, for "use at most" hints: 2^32-1 -> '49d', 90500 -> '1m'. */
export function spellAtMost(ms: number): string {
  const [unit, size] = UNITS_LARGEST_FIRST.find(([, each]) => ms >= each) ?? ['ms', 1];
  return `${Math.floor(ms / size)}${unit}`;
}
