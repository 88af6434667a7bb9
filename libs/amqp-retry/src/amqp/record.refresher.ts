import type { ConfirmChannel, GetMessage } from 'amqplib';
import { getAll } from './channel-get.settler.js';
import { recordsDueForRefresh } from '../core/topology/record-wear.decision.js';
import { withoutDeliveryCounts } from '../core/delivery/delivery.count.js';

/**
 * Every message of a queue of records, in order, got unacked (the channel's close gives them back), on a confirm
 * channel: when recordsDueForRefresh says so, a copy of each (same body, headers without the counts, content type; persistent, as every record) is
 * published to the tail in the same order, and once the broker confirmed them all the originals are acked at once (one
 * ack of all up to the last). A stop between the two leaves both, the copies behind the originals, in the same order:
 * readers that take the last record as the newest read the same. The copies do not come back to this reader: the
 * queue holds as many records as it returns.
 */
export async function readRecordMessages(channel: ConfirmChannel, queue: string): Promise<GetMessage[]> {
  const messages = await getAll(channel, queue);
  if (!recordsDueForRefresh(messages)) return messages;
  for (const { content, properties } of messages) {
    const contentType = typeof properties.contentType === 'string' ? { contentType: properties.contentType } : {};
    channel.sendToQueue(queue, content, { ...contentType, persistent: true, headers: withoutDeliveryCounts(properties.headers) });
  }
  await channel.waitForConfirms();
  channel.ack(messages[messages.length - 1] as GetMessage, true);
  return messages;
}
