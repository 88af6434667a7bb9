import { RetryConfigError } from '../../errors/retry-config.error.js';
import { DURATION_HINT, formatDuration, MAX_TTL_MS, readDurationWithin, spellAtMost } from '../time/duration.reader.js';
import type { Deserializer } from '../message/body.decoder.js';
import type { QueueType } from '../topology/topology.types.js';

/** Longest text of a value shown in an error: enough to recognise it, not a dump of a large object. */
const MAX_SHOWN_CHARS = 200;

/** JSON with BigInts as `10n`; throws on what JSON cannot take (cycles) and on throwing getters or `toJSON`. */
const jsonOf = (value: unknown): string | undefined => JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? `${item}n` : item));

function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  // String() is safe for every other primitive, symbols included (unlike a template literal, which throws on a symbol).
  if (typeof value !== 'object' || value === null) return String(value);
  try {
    const json = jsonOf(value);
    if (json !== undefined) return json;
  } catch {
    // A cycle, a throwing getter or toJSON: said by its kind below.
  }
  return Array.isArray(value) ? 'an array' : 'an object';
}

/**
 * A configured value as an error message shows it: strings quoted, objects as JSON, anything else by its kind; cut
 * to MAX_SHOWN_CHARS. Never throws, whatever the value (BigInt, symbol, cycles, getters that throw, a hostile Proxy).
 * @example showValue('soon') // '"soon"'
 */
export function showValue(value: unknown): string {
  let text: string;
  try {
    text = describeValue(value);
  } catch {
    text = 'a value without a text form';
  }
  return text.length > MAX_SHOWN_CHARS ? `${text.slice(0, MAX_SHOWN_CHARS)}…` : text;
}

/** The range a configured duration must fall in, and why, for the error that names the way back into it. */
export interface DurationRange {
  /** Least milliseconds (default 0), what a shorter value would do, and the way out (default: use at least min). */
  min?: number;
  below?: string;
  belowFix?: string;
  /** Most milliseconds, and why no more (not setTimeout's limit: core/time/duration.timer arms any length). */
  max: number;
  above: string;
}

/** Tier and delay TTLs: RabbitMQ takes no longer one. */
export const TTL_RANGE: DurationRange = { max: MAX_TTL_MS, above: "RabbitMQ's largest TTL (about 49 days)" };
/** Time limits and intervals: bounded so that every limit fits in a TTL. */
export const TIME_LIMIT_RANGE: DurationRange = { max: MAX_TTL_MS, above: 'the longest time limit the library takes (about 49 days)' };
/** Time limits that cannot be 0 (a limit of 0 would fail everything at once). */
export const POSITIVE_TIME_LIMIT_RANGE: DurationRange = {
  ...TIME_LIMIT_RANGE,
  min: 1,
  below: 'a time limit of 0 would fail everything at once',
  belowFix: 'Use a time limit above 0',
};

/**
 * The library's one duration reader: milliseconds, or a number with a unit, within `range`; rounded up to whole ms;
 * `fallback` when absent and a fallback is given. Throws a RetryConfigError that names `key` as the user wrote it, the
 * value, and the way to a valid one.
 * @example readDuration('30s', 'RetryModule option "shutdownTimeout"', "'30s'", TIME_LIMIT_RANGE) // 30000
 */
export function readDuration(value: unknown, key: string, example: string, range: DurationRange, fallback?: number): number {
  if (value === undefined && fallback !== undefined) return fallback;
  const min = range.min ?? 0;
  const read = readDurationWithin(value, min, range.max);
  if (read.ok) return read.ms;
  if (read.problem === 'not-a-duration') {
    throw new RetryConfigError(key, `has ${showValue(value)}, which is not a duration`, `Use ${DURATION_HINT}, e.g. ${example}.`);
  }
  if (read.problem === 'below') {
    throw new RetryConfigError(
      key,
      `is ${read.ms} ms: ${range.below ?? `the least it takes is ${formatDuration(min)}`}`,
      `${range.belowFix ?? `Use at least ${formatDuration(min)}`}, e.g. ${example}.`,
    );
  }
  throw new RetryConfigError(key, `has ${showValue(value)}, longer than ${range.above}`, `Use at most ${spellAtMost(range.max)}.`);
}

/** Reads a list of tier delays, each a duration usable as a queue TTL (TTL_RANGE). */
export function readDelays(value: unknown, key: string, example: string): number[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new RetryConfigError(key, `is ${showValue(value)}`, `Give at least one delay, e.g. ${example}.`);
  }
  refuseHoles(value, key, 'delay', example);
  return value.map((item: unknown) => readDuration(item, key, example, TTL_RANGE));
}

/**
 * Refuses a sparse array (`['1s', , '1m']`, `new Array(2)`): map, some and every skip its holes, so an entry would
 * go unchecked and surface later as undefined. `what` names an entry ("delay"), `example` a valid list.
 */
export function refuseHoles(value: readonly unknown[], key: string, what: string, example: string): void {
  for (let i = 0; i < value.length; i++) {
    if (!(i in value)) {
      throw new RetryConfigError(
        key,
        `has no ${what} at index ${i} (a hole in the list, as in [a, , b])`,
        `Give a ${what} at every position, e.g. ${example}.`,
      );
    }
  }
}

/** Whether `value` is an object literal (or has no prototype): not null, an array, a Date, a Map or a class instance. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** A whole number as a person writes one in an environment variable. */
const DECIMAL_INTEGER = /^\s*-?\d+\s*$/;

/**
 * Reads a whole number in [min, max]; strings of decimal digits are accepted (they come from the environment), not
 * what else Number() reads ('0x10', '1e1', '0b11'); `fallback` when absent and a fallback is given.
 */
export function readInteger(value: unknown, key: string, min: number, max: number, example: string, fallback?: number): number {
  if (value === undefined && fallback !== undefined) return fallback;
  const n = typeof value === 'string' && DECIMAL_INTEGER.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    throw new RetryConfigError(key, `is ${showValue(value)}`, `Use a whole number from ${min} to ${max}, e.g. ${example}.`);
  }
  return n;
}

/** Reads a number in [min, max] (fractions allowed); `fallback` when absent and a fallback is given. */
export function readNumber(value: unknown, key: string, min: number, max: number, example: string, fallback?: number): number {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new RetryConfigError(key, `is ${showValue(value)}`, `Use a number from ${min} to ${max}, e.g. ${example}.`);
  }
  return value;
}

/** A UTF-16 surrogate without its other half: with the `u` flag, a whole pair is one code point and does not match. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * Whether `value` is well-formed UTF-16 (no lone surrogate), so that its UTF-8 bytes decode back to it. A name that is
 * not comes back from the broker with U+FFFD in its place (x-death, queue listings) and never equals the configured one.
 */
export const isWellFormedText = (value: string): boolean => !LONE_SURROGATE.test(value);

/**
 * Refuses text that is not well-formed UTF-16 (isWellFormedText), naming `key` and the fix; `example` is a valid value.
 * Names and header names go to the broker as UTF-8: a lone surrogate comes back as U+FFFD and never equals the one given.
 */
export function refuseIllFormedText(value: string, key: string, example: string): void {
  if (isWellFormedText(value)) return;
  throw new RetryConfigError(
    key,
    `is ${showValue(value)}, which holds half of a UTF-16 surrogate pair (text cut through an emoji or another character outside the BMP): RabbitMQ would store U+FFFD in its place, and the library, which compares names, would never find it again`,
    `Give the whole character or leave it out, e.g. ${example}.`,
  );
}

/**
 * Reads a non-empty AMQP name (shortstr: at most 255 bytes) that leaves `reserve` bytes for derived names, well-formed
 * (see isWellFormedText).
 */
export function readName(value: unknown, key: string, reserve: number, example: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new RetryConfigError(key, `is ${showValue(value)}`, `Give a non-empty name, e.g. ${example}.`);
  }
  if (value.startsWith('amq.')) {
    throw new RetryConfigError(
      key,
      `is ${showValue(value)}: names starting with "amq." are reserved by RabbitMQ`,
      `Choose another name, e.g. ${example}.`,
    );
  }
  refuseIllFormedText(value, key, example);
  if (Buffer.byteLength(value) > 255 - reserve) {
    throw new RetryConfigError(
      key,
      `is ${Buffer.byteLength(value)} bytes long`,
      `Use at most ${255 - reserve} bytes: AMQP names are limited to 255 and the library appends suffixes.`,
    );
  }
  return value;
}

/** Reads true or false; `fallback` when absent. */
export function readFlag(value: unknown, key: string, fallback = false): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new RetryConfigError(key, `is ${showValue(value)}`, 'Use true or false.');
  return value;
}

/** Reads a queue type: 'classic' or 'quorum'. */
export function readQueueType(value: unknown, key: string): QueueType {
  if (value === 'classic' || value === 'quorum') return value;
  throw new RetryConfigError(key, `is ${showValue(value)}`, "Use 'classic' or 'quorum'.");
}

/** Reads a deserializer: 'json', 'raw' or a function of the body and the delivery. */
export function readDeserializer(value: unknown, key: string): Deserializer {
  if (value === 'json' || value === 'raw' || typeof value === 'function') return value as Deserializer;
  throw new RetryConfigError(key, `is ${showValue(value)}`, "Use 'json', 'raw', or a function (content: Buffer, message) => payload.");
}
