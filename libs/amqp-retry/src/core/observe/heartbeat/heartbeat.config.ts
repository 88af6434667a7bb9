import { RetryConfigError } from '../../../errors/retry-config.error.js';
import { showValue } from '../../config/config.readers.js';
import { refuseUnknownKeys } from '../../config/option-keys.js';

/** How often an instance beats unless told otherwise, in ms. */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000;
/** The range of a beat interval, in ms: at least 250 (a beat is a publish), at most a minute (gone within 3 minutes). */
export const HEARTBEAT_INTERVAL_RANGE = { min: 250, max: 60_000 } as const;

/**
 * Reads RetryModuleOptions.heartbeat: `true` (every 5 s), `{ intervalMs }`, or `false`/absent (none).
 * @example readHeartbeat({ intervalMs: 2000 }, (key) => `RetryModule option "${key}"`) // { intervalMs: 2000 }
 */
export function readHeartbeat(value: unknown, at: (key: string) => string): { intervalMs: number } | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { intervalMs: DEFAULT_HEARTBEAT_INTERVAL_MS };
  const { min, max } = HEARTBEAT_INTERVAL_RANGE;
  const fix = `Give true (a beat every ${DEFAULT_HEARTBEAT_INTERVAL_MS} ms), false, or { intervalMs } with a whole number of milliseconds from ${min} to ${max}.`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new RetryConfigError(at('heartbeat'), `is ${showValue(value)}`, fix);
  refuseUnknownKeys(value, ['intervalMs'], 'heartbeat', at);
  const { intervalMs = DEFAULT_HEARTBEAT_INTERVAL_MS } = value as { intervalMs?: unknown };
  if (typeof intervalMs !== 'number' || !Number.isInteger(intervalMs) || intervalMs < min || intervalMs > max) {
    throw new RetryConfigError(at('heartbeat.intervalMs'), `is ${showValue(intervalMs)}`, fix);
  }
  return { intervalMs };
}
