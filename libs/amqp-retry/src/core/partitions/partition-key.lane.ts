import { createHash } from 'node:crypto';
import type { ConsumeMessage } from 'amqplib';
import { MAX_KEY_LENGTH, type MessageKeyFn } from '../message/message-key.reader.js';
import type { PartitionKey } from '../config/retry.options.js';

/**
 * The ordering key of a partitioned handler's delivery: the value the broker hashed, so that one key also runs one at
 * a time inside its partition. A value the lanes cannot take ('' or longer than MAX_KEY_LENGTH) runs in the lane of
 * its digest, `sha256:<hex>`; a missing header or message id is no key.
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
