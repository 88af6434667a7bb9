import { getAll } from './channel-get.settler.js';
import type { ConfirmPublisher } from './confirm.publisher.js';
import { readHashKeyRecord, writeHashKeyRecord, type HashKeyRecord } from '../core/partitions/hash-key.record.js';
import { queueTypeArgument } from '../core/topology/queue-type.mismatch.js';
import type { ChannelOpener } from './queue-exists.probe.js';

/** The newest record in `queue`, left there (the channel closes without acking); undefined when there is none. */
export async function readHashKey(open: ChannelOpener, queue: string): Promise<HashKeyRecord | undefined> {
  const channel = await open();
  try {
    await channel.checkQueue(queue);
    let newest: HashKeyRecord | undefined;
    for (const message of await getAll(channel, queue)) newest = readHashKeyRecord(message.content) ?? newest;
    return newest;
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === 404) return undefined;
    throw error;
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/** Replaces the record in `queue` (declared durable and classic if missing) with `record`, confirmed. */
export async function recordHashKey(open: ChannelOpener, publisher: ConfirmPublisher, queue: string, record: HashKeyRecord): Promise<void> {
  const channel = await open();
  try {
    await channel.assertQueue(queue, { durable: true, arguments: queueTypeArgument('classic') });
    await channel.purgeQueue(queue);
  } finally {
    await channel.close().catch(() => undefined);
  }
  await publisher.publish('', queue, writeHashKeyRecord(record), { persistent: true, contentType: 'application/json' });
}
