import type { MessageProperties, Options } from 'amqplib';
import type { ParkReason } from './delivery.decision.js';
import { errorMessage } from './error-message.js';
import { republishProperties } from './message-properties.js';
import { firstRejection, type XDeath } from './x-death.parser.js';

/** Headers share one AMQP frame (frame_max, 128 KiB by default) with the rest of the properties. */
export const MAX_EXCEPTION_MESSAGE_BYTES = 4 * 1024;
export const MAX_EXCEPTION_STACK_BYTES = 16 * 1024;

/** Cuts a string to at most `maxBytes` of UTF-8 without splitting a character, marking the cut. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const marker = '... [truncated]';
  let end = maxBytes - Buffer.byteLength(marker);
  const bytes = Buffer.from(text);
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--; // back off to the start of a character
  return bytes.subarray(0, end).toString('utf8') + marker;
}

export interface ParkInput {
  reason: ParkReason;
  error: unknown;
  /** Handler calls made for this message. */
  handlerCalls: number;
  queue: string;
  deaths: readonly XDeath[];
  /** The delivery's own exchange and routing key (used when the message never failed before). */
  deliveredExchange: string;
  deliveredRoutingKey: string;
  properties: MessageProperties;
  now: Date;
}

/**
 * The properties of the parked copy: the original ones with the parking headers added. Two are changed so that the
 * copy cannot vanish: it is persistent, and a per-message `expiration` is dropped (kept as `x-original-expiration`).
 * `userId` is dropped (kept as `x-original-user-id`) because the broker rejects a publish whose user_id is not the
 * publishing connection's user.
 */
export function parkedPublishOptions(input: ParkInput): Options.Publish {
  const { properties, error } = input;
  const first = firstRejection(input.deaths, input.queue);
  const message = errorMessage(error);
  const stack = error instanceof Error && error.stack ? error.stack : message;
  const headers: Record<string, unknown> = {
    ...properties.headers,
    'x-parked-reason': input.reason,
    'x-exception-message': truncateUtf8(message, MAX_EXCEPTION_MESSAGE_BYTES),
    'x-exception-stack': truncateUtf8(stack, MAX_EXCEPTION_STACK_BYTES),
    'x-original-exchange': first?.exchange ?? input.deliveredExchange,
    'x-original-routing-key': first?.routingKeys[0] ?? input.deliveredRoutingKey,
    'x-retry-attempts': input.handlerCalls,
    'x-parked-at': input.now.toISOString(),
  };
  if (properties.expiration !== undefined) headers['x-original-expiration'] = String(properties.expiration);
  if (properties.userId !== undefined) headers['x-original-user-id'] = properties.userId;
  return republishProperties(properties, headers);
}
