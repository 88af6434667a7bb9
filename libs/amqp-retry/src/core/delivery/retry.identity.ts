import { createHash } from 'node:crypto';
import { firstRoute } from './first-failure.headers.js';
import type { XDeath } from './x-death.parser.js';

/** What of a delivery its identity is read from (an amqplib ConsumeMessage has it all). */
export interface IdentifiedDelivery {
  fields: { exchange: string; routingKey: string };
  properties: { headers?: Record<string, unknown>; messageId?: unknown } & { [key in StableProperty]?: unknown };
  content: Buffer;
}

/**
 * Properties both the broker's dead-lettering and the library's moved copy (republishProperties) keep as they were:
 * not `expiration`, `userId`, `deliveryMode`, nor the headers, to which the broker adds its death records.
 */
const STABLE_PROPERTIES = ['contentType', 'contentEncoding', 'correlationId', 'replyTo', 'timestamp', 'type', 'appId', 'priority'] as const;
type StableProperty = (typeof STABLE_PROPERTIES)[number];

/**
 * What identifies a message on `queue` across its retries: its message id when it has one, else a digest of what the
 * tiers leave as it was: the body, the stable properties, and its first route (firstRoute). Two messages published
 * byte for byte alike, without ids, get the same identity: `retryOwner` tells them apart by attempt.
 * @example retryIdentity(message, deaths, 'orders') // 'sha256:9f…' or 'id:order-42'
 */
export function retryIdentity(message: IdentifiedDelivery, deaths: readonly XDeath[], queue: string): string {
  const id: unknown = message.properties.messageId;
  if (typeof id === 'string' && id !== '') return `id:${id}`;
  const route = firstRoute(message.properties.headers, deaths, queue, message.fields);
  const hash = createHash('sha256');
  for (const part of [route.exchange, route.routingKey, ...STABLE_PROPERTIES.map((key) => stableText(message.properties[key]))]) {
    hash.update(part).update('\0');
  }
  return `sha256:${hash.update(message.content).digest('hex')}`;
}

/**
 * The owner of a delivery's turn: its identity at this attempt. A hold left by attempt n waits for attempt n + 1, so a
 * new message alike (attempt 1) is not mistaken for the retried copy.
 * @example retryOwner('id:order-42', 2) // 'id:order-42#2'
 */
export const retryOwner = (identity: string, attempt: number): string => `${identity}#${attempt}`;

/** A property as text for the digest; absent and empty differ. */
function stableText(value: unknown): string {
  if (value === undefined || value === null) return '-';
  return `=${typeof value === 'string' ? value : JSON.stringify(value)}`;
}
