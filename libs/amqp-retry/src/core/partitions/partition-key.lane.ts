import { createHash } from 'node:crypto';
import type { ConsumeMessage } from 'amqplib';
import { MAX_KEY_LENGTH, type MessageKeyFn } from '../message/message-key.reader.js';
import type { PartitionKey } from '../config/retry.options.js';

/**
 * The ordering key of a partitioned handler's delivery: the value the broker hashed, so that the messages the broker
 * puts in one partition for one key also run one at a time inside it, whatever that value is. The consistent-hash
 * exchange hashes any value, the empty string and a string of any length included; the ordering lanes take keys of 1
 * to MAX_KEY_LENGTH characters, so such a key runs in the lane of its SHA-256 digest, `sha256:<64 hex digits>` (the
 * name logs give it). Strings as they are, numbers as decimals; a header missing or of another type is no key (those
 * messages run side by side), as is a missing message id.
 */
export function partitionLaneKey(key: PartitionKey): MessageKeyFn {
  if (key === 'messageId') return (_payload, message) => laneOf(message.properties.messageId);
  const { header } = key;
  return (_payload, message: ConsumeMessage) => laneOf((message.properties.headers as Record<string, unknown> | undefined)?.[header]);
}

function laneOf(value: unknown): string | undefined {
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value !== 'string') return undefined;
  if (value !== '' && value.length <= MAX_KEY_LENGTH) return value;
  return `sha256:${createHash('sha256').update(value, 'utf8').digest('hex')}`;
}
