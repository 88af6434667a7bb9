import type { MessageProperties, Options } from 'amqplib';
import { MAX_TTL_MS } from '../time/duration.reader.js';
import { encodedTableSize } from '../headers/field-table.size.js';
import { DIRECT_REPLY_QUEUE } from '../publish/reply-address.rules.js';

/** The delivery's headers as a table ({} when there are none). */
export function headersOf(properties: MessageProperties): Record<string, unknown> {
  const headers: unknown = properties.headers; // amqplib types it as any
  return typeof headers === 'object' && headers !== null ? (headers as Record<string, unknown>) : {};
}

/** The properties a persistent copy of a delivered message keeps (republishProperties). */
const REPUBLISHED = ['contentType', 'contentEncoding', 'priority', 'correlationId', 'replyTo', 'messageId', 'timestamp', 'type', 'appId'] as const;

/**
 * The properties of a delivered message to publish a persistent copy with (parked, or forwarded after a delay), but
 * `expiration` (the copy would expire) and `userId` (the broker refuses another user's).
 */
export function republishProperties(properties: MessageProperties, headers: Record<string, unknown>): Options.Publish {
  const copy: Options.Publish = { headers, persistent: true };
  for (const key of REPUBLISHED) copy[key] = properties[key] as never;
  return copy;
}

/**
 * A publish's `expiration` as the broker takes it: a string of digits, from 0 to MAX_TTL_MS ms; undefined when none is
 * given. Anything else throws a RangeError before anything is published: the broker would close the channel (406).
 * @example readExpiration(200) // '200'
 */
export function readExpiration(expiration: unknown): string | undefined {
  if (expiration === undefined || expiration === null) return undefined;
  const text = typeof expiration === 'number' ? String(expiration) : expiration;
  if (typeof text === 'string' && /^\d{1,10}$/.test(text) && Number(text) <= MAX_TTL_MS) return String(Number(text));
  throw new RangeError(
    `Invalid expiration ${shownValue(expiration)}: a per-message expiration is a whole number of milliseconds from 0 to ${MAX_TTL_MS}, ` +
      `as a number or a string of digits ('60000').`,
  );
}

/** Most bytes a publish's headers may take (encodedTableSize): amqplib encodes the properties into a 64 KiB scratch buffer. */
export const MAX_PUBLISH_HEADERS_BYTES = 60 * 1024;

/** The first timestamp AMQP cannot carry: it is an unsigned 64-bit number of seconds. */
const MAX_TIMESTAMP = 2 ** 64;

/** The properties AMQP carries as shortstrs (at most 255 bytes), in the order they are checked. */
const SHORT_STRING_PROPERTIES = ['contentType', 'contentEncoding', 'correlationId', 'replyTo', 'messageId', 'type', 'userId', 'appId'] as const;

/**
 * Checks a publish's properties by the rules amqplib and the broker apply, so that a bad one is refused before anything
 * is published (or written to the outbox). Throws a TypeError or RangeError naming the property. On every publish:
 * the usual properties (a few short strings, a few flat headers) cost no allocation. With `users` (those of the
 * connection's URLs), a `userId` must be one of them: the broker refuses any other (406, closing the channel) unless
 * the user has the `impersonator` tag, which is not supported here.
 * @example checkPublishProperties({ priority: 300 }) // RangeError: Invalid priority 300: ...
 */
export function checkPublishProperties(properties: Options.Publish, users?: readonly string[]): void {
  for (const key of SHORT_STRING_PROPERTIES) checkShortString(key, properties[key]);
  if (properties.replyTo === DIRECT_REPLY_QUEUE) {
    throw new RangeError(
      `Invalid replyTo "${DIRECT_REPLY_QUEUE}": the broker takes it only from a channel that consumes its direct replies, and closes any other ` +
        `(406) with every publish in flight on it. To send a request and await its reply, use RetryClient.send; else give a reply queue's name.`,
    );
  }
  const { userId } = properties;
  if (users && userId != null && !users.includes(userId as string)) {
    throw new RangeError(`Invalid userId "${String(userId)}": the broker takes only the connection's own user ("${users.join('", "')}").`);
  }
  const { priority, deliveryMode, timestamp, headers } = properties;
  if (priority != null && !(Number.isInteger(priority) && priority >= 0 && priority <= 255)) {
    throw new RangeError(
      `Invalid priority ${shownValue(priority)}: a priority is a whole number from 0 to 255 (a priority queue uses 0 to its x-max-priority).`,
    );
  }
  if (deliveryMode != null && typeof deliveryMode !== 'boolean' && deliveryMode !== 1 && deliveryMode !== 2) {
    throw new RangeError(`Invalid deliveryMode ${shownValue(deliveryMode)}: give 1 (transient) or 2 (persistent), or use persistent: true | false.`);
  }
  if (timestamp != null && !(typeof timestamp === 'number' && Number.isFinite(timestamp))) {
    throw new TypeError(`Invalid timestamp ${shownValue(timestamp)}: give a number (seconds since the epoch).`);
  }
  if (timestamp != null && !(Number.isInteger(timestamp) && timestamp >= 0 && timestamp < MAX_TIMESTAMP)) {
    throw new RangeError(
      `Invalid timestamp ${shownValue(timestamp)}: a timestamp is a whole number of seconds since the epoch, from 0 (1970) on; AMQP carries no earlier one.`,
    );
  }
  if (headers != null) checkHeaders(headers);
  if (properties.expiration != null) readExpiration(properties.expiration);
}

/** Most bytes of UTF-8 in an exchange name or a routing key: AMQP carries them as shortstrs. */
export const MAX_ROUTE_BYTES = 255;

/**
 * Checks where a publish goes by the limits of AMQP: an exchange name and a routing key of at most MAX_ROUTE_BYTES
 * bytes of UTF-8, amqplib refusing to send a longer one; with `recipients` (a delayed publish's properties, whose
 * target waits in headers, where any length passes), each `CC` and `BCC` key too, properties or headers, as the
 * forwarder publishes them as routing keys. Throws a RangeError naming the limit.
 * @example checkPublishRoute('orders', 'é'.repeat(200)) // RangeError: Invalid routing key: 400 bytes of UTF-8, ...
 */
export function checkPublishRoute(exchange: string, routingKey: string, recipients?: Options.Publish): void {
  checkRouteName('exchange name', exchange);
  checkRouteName('routing key', routingKey);
  if (recipients === undefined) return;
  for (const key of ['CC', 'BCC'] as const) {
    const value: unknown = recipients[key] ?? (recipients.headers as Record<string, unknown> | undefined)?.[key];
    for (const one of [value ?? []].flat()) checkRouteName(`${key} key`, Buffer.isBuffer(one) ? one : String(one));
  }
}

function checkRouteName(what: string, value: unknown): void {
  if (!(Buffer.isBuffer(value) || (typeof value === 'string' && value.length > 85))) return; // 85 UTF-16 units fit
  const bytes = Buffer.isBuffer(value) ? value.length : Buffer.byteLength(value);
  if (bytes <= MAX_ROUTE_BYTES) return;
  throw new RangeError(`Invalid ${what}: ${bytes} bytes of UTF-8, where AMQP allows at most ${MAX_ROUTE_BYTES}.`);
}

function checkShortString(key: string, value: unknown): void {
  if (value == null) return;
  if (typeof value !== 'string') throw new TypeError(`Invalid ${key} (a ${typeof value}): give a string of at most 255 bytes.`);
  // At most 3 bytes a UTF-16 unit: a string of 85 units or fewer fits without counting.
  if (value.length > 85 && Buffer.byteLength(value) > 255) {
    throw new RangeError(`Invalid ${key}: ${Buffer.byteLength(value)} bytes, where AMQP allows at most 255.`);
  }
}

function checkHeaders(headers: unknown): void {
  if (typeof headers !== 'object' || Array.isArray(headers))
    throw new TypeError(`Invalid headers ${shownValue(headers)}: give an object of header names and values.`);
  const table = headers as Record<string, unknown>;
  // The broker closes the channel over a CC or BCC that is no array (406 unacceptable_type_in_header), null included.
  for (const key of ['CC', 'BCC'] as const) {
    const value = table[key];
    if (value !== undefined && !Array.isArray(value)) {
      throw new TypeError(`Invalid header ${key} ${shownValue(value)}: give an array of routing keys (['eu.orders']), or leave it out.`);
    }
  }
  if (fitsByFar(table)) return;
  const size = encodedTableSize(table);
  if (!Number.isFinite(size)) {
    throw new TypeError(
      'Invalid headers: amqplib cannot encode them (a name over 255 bytes, a bigint, symbol or function, an undefined array element, or a cycle).',
    );
  }
  if (size > MAX_PUBLISH_HEADERS_BYTES) {
    throw new RangeError(
      `Invalid headers: about ${size} bytes encoded, over the ${MAX_PUBLISH_HEADERS_BYTES} a publish may carry; put large data in the body.`,
    );
  }
}

/** Whether `headers` are flat, short keys and small values, at most 32 of them: 1 + 255 + 1 + 4 + 768 bytes each, well under the limit. */
function fitsByFar(headers: Record<string, unknown>): boolean {
  let count = 0;
  for (const key in headers) {
    const value = headers[key];
    const type = typeof value;
    const small = value == null || type === 'number' || type === 'boolean' || (type === 'string' && (value as string).length <= 256);
    if (key.length > 85 || ++count > 32 || !small) return false;
  }
  return true;
}

function shownValue(value: unknown): string {
  return typeof value === 'string' ? `"${value}"` : typeof value === 'number' ? String(value) : `(a ${typeof value})`;
}

/**
 * A message's publish time in epoch ms from its AMQP `timestamp` property: seconds by the AMQP specification (what
 * most clients set), milliseconds when it is too large to be seconds. Undefined without one.
 */
export function publishedAt(timestamp: unknown): number | undefined {
  if (typeof timestamp !== 'number' || !Number.isFinite(timestamp) || timestamp <= 0) return undefined;
  return timestamp > 100_000_000_000 ? timestamp : timestamp * 1_000;
}
