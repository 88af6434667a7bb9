import { RetryConfigError } from '../errors/retry-config.error.js';
import { DURATION_HINT, type Duration, parseDuration } from './duration.js';
import type { Deserializer } from './body.decoder.js';
import type { QueueType } from './retry-options.js';

/** The longest TTL RabbitMQ accepts for a queue (x-message-ttl is an unsigned 32-bit count of ms). */
export const MAX_TIER_DELAY_MS = 2 ** 32 - 1;

function show(value: unknown): string {
  if (typeof value === 'string') return `"${value}"`;
  if (typeof value !== 'object' || value === null) return String(value);
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/** Reads a list of tier delays, each a valid duration of at most MAX_TIER_DELAY_MS. */
export function readDelays(value: unknown, key: string, example: string): number[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new RetryConfigError(key, `is ${show(value)}`, `Give at least one delay, e.g. ${example}.`);
  }
  return value.map((item: unknown) => readDelay(item as Duration, key, example));
}

/** Reads one duration usable as a queue TTL. */
export function readDelay(value: unknown, key: string, example: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) {
    throw new RetryConfigError(key, `has ${show(value)}, which is not a duration`, `Use ${DURATION_HINT}, e.g. ${example}.`);
  }
  if (ms > MAX_TIER_DELAY_MS) {
    throw new RetryConfigError(key, `has ${show(value)}, longer than RabbitMQ's largest TTL (about 49 days)`, `Use at most 49d.`);
  }
  return ms;
}

/** Reads a whole number in [min, max]; numeric strings are accepted (they come from the environment). */
export function readInteger(value: unknown, key: string, min: number, max: number, example: string): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    throw new RetryConfigError(key, `is ${show(value)}`, `Use a whole number from ${min} to ${max}, e.g. ${example}.`);
  }
  return n;
}

/** Reads a number in [min, max] (fractions allowed). */
export function readNumber(value: unknown, key: string, min: number, max: number, example: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new RetryConfigError(key, `is ${show(value)}`, `Use a number from ${min} to ${max}, e.g. ${example}.`);
  }
  return value;
}

/** Reads a non-empty AMQP name (shortstr: at most 255 bytes) that leaves `reserve` bytes for derived names. */
export function readName(value: unknown, key: string, reserve: number, example: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new RetryConfigError(key, `is ${show(value)}`, `Give a non-empty name, e.g. ${example}.`);
  }
  if (value.startsWith('amq.')) {
    throw new RetryConfigError(
      key,
      `is ${show(value)}: names starting with "amq." are reserved by RabbitMQ`,
      `Choose another name, e.g. ${example}.`,
    );
  }
  if (Buffer.byteLength(value) > 255 - reserve) {
    throw new RetryConfigError(
      key,
      `is ${Buffer.byteLength(value)} bytes long`,
      `Use at most ${255 - reserve} bytes: AMQP names are limited to 255 and the library appends suffixes.`,
    );
  }
  return value;
}

/** Reads a queue type: 'classic' or 'quorum'. */
export function readQueueType(value: unknown, key: string): QueueType {
  if (value === 'classic' || value === 'quorum') return value;
  throw new RetryConfigError(key, `is ${show(value)}`, "Use 'classic' or 'quorum'.");
}

/** Reads a deserializer: 'json', 'raw' or a function of the body and the delivery. */
export function readDeserializer(value: unknown, key: string): Deserializer {
  if (value === 'json' || value === 'raw' || typeof value === 'function') return value as Deserializer;
  throw new RetryConfigError(key, `is ${show(value)}`, "Use 'json', 'raw', or a function (content: Buffer, message) => payload.");
}
