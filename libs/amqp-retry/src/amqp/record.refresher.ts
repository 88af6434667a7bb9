import type { ConfirmChannel, GetMessage } from 'amqplib';
import { getAll } from './channel-get.settler.js';
import { recordsDueForRefresh, recordsToCopy } from '../core/topology/record-wear.decision.js';
import { withoutDeliveryCounts } from '../core/delivery/delivery.count.js';

/** The records of a queue of records, read by readRecordMessages. */
export interface ReadRecords {
  /** Every message the queue held, in order. */
  messages: GetMessage[];
  /** How many messages stand for them in the queue now: fewer than `messages` when a refresh dropped copies of one body. */
  held: number;
}

/**
 * Every message of a queue of records, in order, got unacked (the channel's close gives them back), on a confirm
 * channel: when recordsDueForRefresh says so, a copy of each body (recordsToCopy: once, at its last place; headers
 * without the counts, the content type, persistent as every record) is published to the tail in the same order, and
 * once the broker confirmed them all the originals are acked at once (one ack of all up to the last). A stop between
 * the two, or a copy the broker refused, leaves the originals and then the copies, the last record still last, and the
 * next refresh drops the copies.
 * Callers that rewrite the queue hold a lock (withQueueLock), so that no other reader holds records meanwhile.
 */
export async function readRecordMessages(channel: ConfirmChannel, queue: string): Promise<ReadRecords> {
  const messages = await getAll(channel, queue);
  if (!recordsDueForRefresh(messages)) return { messages, held: messages.length };
  const copies = recordsToCopy(messages.map((message) => message.content));
  for (const index of copies) {
    const { content, properties } = messages[index] as GetMessage;
    const contentType = typeof properties.contentType === 'string' ? { contentType: properties.contentType } : {};
    channel.publish('', queue, content, { ...contentType, persistent: true, headers: withoutDeliveryCounts(properties.headers) });
  }
  try {
    await channel.waitForConfirms();
  } catch {
    return { messages, held: messages.length }; // the originals go back with the channel's close; confirmed copies stay behind them
  }
  channel.ack(messages[messages.length - 1] as GetMessage, true);
  return { messages, held: copies.length };
}
