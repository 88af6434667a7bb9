import type { MessageProperties, Options } from 'amqplib';
import { MAX_TTL_MS } from '../time/duration.reader.js';

/**
 * The properties of a delivered message to publish a copy with (parked, or forwarded after a delay). Two are left
 * out on purpose: `expiration`, which would let the copy expire (or leave a delay level early), and `userId`, which
 * the broker refuses unless it is the publishing connection's user. The copy is always persistent.
 */
export function republishProperties(properties: MessageProperties, headers: Record<string, unknown>): Options.Publish {
  return {
    contentType: properties.contentType,
    contentEncoding: properties.contentEncoding,
    headers,
    persistent: true,
    priority: properties.priority,
    correlationId: properties.correlationId,
    replyTo: properties.replyTo,
    messageId: properties.messageId,
    timestamp: properties.timestamp,
    type: properties.type,
    appId: properties.appId,
  };
}

/**
 * A publish's `expiration` as the broker takes it: a whole number of milliseconds from 0 to MAX_TTL_MS (RabbitMQ's largest TTL), as a
 * string of digits; undefined when none is given. Anything else throws a RangeError naming the value, before anything
 * is published: the broker would close the channel (406) on a malformed one, and a delayed copy carrying one could
 * never be forwarded.
 * @example readExpiration(200) // '200'
 */
export function readExpiration(expiration: unknown): string | undefined {
  if (expiration === undefined || expiration === null) return undefined;
  const text = typeof expiration === 'number' ? String(expiration) : expiration;
  if (typeof text === 'string' && /^\d{1,10}$/.test(text) && Number(text) <= MAX_TTL_MS) return String(Number(text));
  const shown = typeof expiration === 'string' ? `"${expiration}"` : typeof expiration === 'number' ? String(expiration) : `(a ${typeof expiration})`;
  throw new RangeError(
    `Invalid expiration ${shown}: a per-message expiration is a whole number of milliseconds from 0 to ${MAX_TTL_MS}, ` +
      `as a number or a string of digits ('60000').`,
  );
}
