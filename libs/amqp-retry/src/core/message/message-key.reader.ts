import type { ConsumeMessage } from 'amqplib';
import { MalformedMessageError } from '../../errors/malformed-message.error.js';

/** Names a message (idempotency) or its sequence (ordering) from its payload and delivery; undefined when it has none. */
export type MessageKeyFn = (payload: unknown, message: ConsumeMessage) => string | undefined;

/** A message's key, or why it has none that can be used. */
export type MessageKey = { ok: true; key: string | undefined } | { ok: false; problem: string };

/** Keys are stored in Redis keys and PostgreSQL text columns and written to logs: keep them bounded. */
export const MAX_KEY_LENGTH = 512;

/**
 * Calls a user's key function defensively: a throw, a value that is not a string, an empty or an overlong string
 * is a problem (the caller parks the message as malformed); undefined means "no key". Never throws.
 */
export function readMessageKey(keyFn: MessageKeyFn, payload: unknown, message: ConsumeMessage, what: string): MessageKey {
  let key: unknown;
  try {
    key = keyFn(payload, message);
  } catch (error) {
    return { ok: false, problem: `the ${what} function threw: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (key === undefined) return { ok: true, key: undefined };
  if (typeof key !== 'string' || key === '')
    return { ok: false, problem: `the ${what} function returned ${JSON.stringify(key) ?? String(key)}, not a non-empty string` };
  if (key.length > MAX_KEY_LENGTH)
    return { ok: false, problem: `the ${what} function returned a key of ${key.length} characters (at most ${MAX_KEY_LENGTH})` };
  return { ok: true, key };
}

/** The header of a delivery as a key: strings as they are, numbers as decimals; anything else is no key. */
export function headerKey(header: string): MessageKeyFn {
  return (_payload, message) => {
    const value: unknown = (message.properties.headers as Record<string, unknown> | undefined)?.[header];
    if (typeof value === 'string') return value === '' ? undefined : value;
    if (typeof value === 'number' || typeof value === 'bigint') return String(value);
    return undefined;
  };
}

/** The default idempotency key: the AMQP message id (RetryPublisher always sets one). */
export const messageIdKey: MessageKeyFn = (_payload, message) => {
  const id: unknown = message.properties.messageId;
  return typeof id === 'string' && id !== '' ? id : undefined;
};

/** The key a feature cannot do without (idempotency, the inbox), else a MalformedMessageError: its problem, or `noKey`. */
export function requireMessageKey(keyFn: MessageKeyFn, payload: unknown, message: ConsumeMessage, what: string, noKey: string): string {
  const read = readMessageKey(keyFn, payload, message, what);
  if (!read.ok) throw new MalformedMessageError(read.problem);
  if (read.key === undefined) throw new MalformedMessageError(noKey);
  return read.key;
}
