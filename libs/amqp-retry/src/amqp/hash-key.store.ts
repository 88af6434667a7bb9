import { getAll } from './channel-get.settler.js';
import type { ConfirmPublisher } from './confirm.publisher.js';
import { readHashKeyRecord, writeHashKeyRecord, type HashKeyRecord } from '../core/partitions/hash-key.record.js';
import { queueTypeArgument } from '../core/topology/queue-type.mismatch.js';
import { type ChannelOpener, isNotFound, onOwnChannel } from './queue-exists.probe.js';

/** The newest record in `queue`, left there (the channel closes without acking); undefined when there is none. */
export function readHashKey(open: ChannelOpener, queue: string): Promise<HashKeyRecord | undefined> {
  return onOwnChannel(open, async (channel) => {
    try {
      await channel.checkQueue(queue);
      let newest: HashKeyRecord | undefined;
      for (const message of await getAll(channel, queue)) newest = readHashKeyRecord(message.content) ?? newest;
      return newest;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  });
}

/** Replaces the record in `queue` (declared durable and classic if missing) with `record`, confirmed. */
export async function recordHashKey(open: ChannelOpener, publisher: ConfirmPublisher, queue: string, record: HashKeyRecord): Promise<void> {
  await onOwnChannel(open, async (channel) => {
    await channel.assertQueue(queue, { durable: true, arguments: queueTypeArgument('classic') });
    await channel.purgeQueue(queue);
  });
  await publisher.publish('', queue, writeHashKeyRecord(record), { persistent: true, contentType: 'application/json' });
}
