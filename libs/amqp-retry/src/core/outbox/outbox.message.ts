import type { Options } from 'amqplib';
import { assertLadderHeaders, readPublishDelay } from '../delivery/delay.plan.js';
import type { Duration } from '../time/duration.reader.js';
import { checkPublishProperties, readExpiration } from '../message/message.properties.js';
import { replyTargetProblem } from '../publish/reply-address.rules.js';

/** The AMQP properties a row keeps (as JSON): those a publisher sets. */
export interface OutboxMessageProperties {
  /** Default: a random UUID, which the consumer's inbox recognises copies by. */
  messageId?: string;
  /** The message's headers. */
  headers?: Record<string, unknown>;
  /** Default true. */
  persistent?: boolean;
  /** Default 'application/json' for a body that is not a Buffer. */
  contentType?: string;
  /** The AMQP `content-encoding` property. */
  contentEncoding?: string;
  /** The AMQP `correlation-id` property. */
  correlationId?: string;
  /** The AMQP `reply-to` property. */
  replyTo?: string;
  /** The AMQP `type` property. */
  type?: string;
  /** The AMQP `app-id` property. */
  appId?: string;
  /** The AMQP `priority` property (for a priority queue). */
  priority?: number;
  /** A per-message TTL in ms, from delivery (see PublishOptions.expiration). */
  expiration?: number | string;
}

/** What `OutboxPublisher.publish(tx, message)` writes. */
export interface OutboxMessage {
  /** The exchange the relay publishes it to ('' for the default exchange). */
  exchange: string;
  /** Its routing key (at most 255 bytes). */
  routingKey: string;
  /** A Buffer is sent as it is; anything else as JSON. */
  body: unknown;
  /** Its AMQP properties. */
  properties?: OutboxMessageProperties;
  /** Deliver this long after the row's insert (through the delay ladder); default at once. */
  delay?: Duration;
  /** Rows with the same key are sent one at a time, in commit order (transactions writing it wait for each other's commit). */
  orderKey?: string;
}

/** A message as a row holds it. */
export interface OutboxRecord {
  exchange: string;
  routingKey: string;
  body: Buffer;
  properties: Options.Publish & { messageId: string };
  orderKey: string | null;
  delayMs: number;
}

const PROPERTY_KEYS = new Set([
  'messageId',
  'headers',
  'persistent',
  'contentType',
  'contentEncoding',
  'correlationId',
  'replyTo',
  'type',
  'appId',
  'priority',
  'expiration',
]);

/**
 * Checks a message before it is written, so that a bad one fails the caller's transaction (a TypeError or RangeError
 * naming the field) rather than reaching the relay, which could never send it.
 * @example readOutboxMessage({ exchange: 'orders', routingKey: 'order.created', body: { id: 42 } }, randomUUID)
 */
export function readOutboxMessage(message: OutboxMessage, newId: () => string): OutboxRecord {
  const fail = (what: string) => new TypeError(`OutboxPublisher.publish: ${what}`);
  if (typeof message !== 'object' || message === null) throw fail('give { exchange, routingKey, body }');
  const { exchange, routingKey, body, properties = {}, delay, orderKey } = message;
  if (typeof exchange !== 'string' || Buffer.byteLength(exchange) > 255)
    throw fail(`exchange is ${JSON.stringify(exchange)}: give a name ('' is the default exchange)`);
  if (typeof routingKey !== 'string' || Buffer.byteLength(routingKey) > 255)
    throw fail(`routingKey is ${JSON.stringify(routingKey)}: give a string of at most 255 bytes`);
  if (orderKey !== undefined && (typeof orderKey !== 'string' || orderKey === '' || orderKey.length > 512)) {
    throw fail(`orderKey is ${JSON.stringify(orderKey)}: give a string of 1 to 512 characters, or leave it out`);
  }
  const unknown = Object.keys(properties).filter((key) => !PROPERTY_KEYS.has(key));
  if (unknown.length > 0) throw fail(`properties has ${unknown.join(', ')}, which the outbox does not keep; use ${[...PROPERTY_KEYS].join(', ')}`);
  const isBuffer = Buffer.isBuffer(body);
  const json = isBuffer ? undefined : JSON.stringify(body);
  if (!isBuffer && json === undefined) throw fail(`a body of type ${typeof body} has no JSON form`);
  // Headers are kept as JSON: a value that would not come back as it was (a bigint, a Buffer) is refused rather than changed.
  const jsonOnly = (_key: string, value: unknown) => {
    const isBufferJson = typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'Buffer';
    if (typeof value === 'bigint' || isBufferJson) throw fail('headers must hold JSON values (strings, numbers, booleans, null, arrays, objects)');
    return value;
  };
  const given = properties.headers;
  const headers = given === undefined ? undefined : (JSON.parse(JSON.stringify(given, jsonOnly)) as Record<string, unknown>);
  const messageId = properties.messageId ?? newId();
  if (typeof messageId !== 'string' || messageId === '')
    throw fail(`properties.messageId is ${JSON.stringify(messageId)}: give a non-empty string, or leave it out`);
  const expiration = readExpiration(properties.expiration);
  const record: OutboxRecord = {
    exchange,
    routingKey,
    body: isBuffer ? body : Buffer.from(json as string),
    // Only the keys of PROPERTY_KEYS are left (checked above): the others are kept as given.
    properties: dropUndefined({
      ...properties,
      contentType: properties.contentType ?? (isBuffer ? undefined : 'application/json'),
      persistent: properties.persistent ?? true,
      messageId,
      headers,
      expiration,
    }),
    orderKey: orderKey ?? null,
    delayMs: delay === undefined ? 0 : readPublishDelay(delay),
  };
  // The engine's publish checks them so too: here, the caller's transaction fails rather than the row parking later.
  checkPublishProperties(record.properties);
  const target = replyTargetProblem(exchange, routingKey, record.delayMs > 0);
  if (target !== undefined) throw fail(`routingKey is ${target}`);
  if (record.delayMs > 0) assertLadderHeaders(record.properties.headers);
  return record;
}

/**
 * Properties read back from a row, or why the row cannot be sent as it is (a driver may hand jsonb over as text, or a
 * jsonb string as its text). A value that is no JSON object (a string, a number, an array, null: written by other
 * means than the outbox's insert) is a problem naming the column: the row could never be sent as it is.
 * @example storedProperties('"x"') // { problem: 'the properties column holds "x", not a JSON object of AMQP properties' }
 */
export function storedProperties(value: unknown): { properties: Options.Publish } | { problem: string } {
  let parsed = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      return { problem: propertiesProblem(JSON.stringify(value)) };
    }
  }
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return { properties: parsed as Options.Publish };
  return { problem: propertiesProblem(JSON.stringify(parsed) ?? typeof parsed) };
}

const PREVIEW_CHARS = 80;

const propertiesProblem = (json: string) =>
  `the properties column holds ${json.length > PREVIEW_CHARS ? `${json.slice(0, PREVIEW_CHARS)}…` : json}, not a JSON object of AMQP properties`;

const dropUndefined = <T extends object>(value: T): T => Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
