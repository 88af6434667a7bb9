import { getSettled } from './channel-get.settler.js';
import { queueExists } from './queue-exists.probe.js';
import type { Channel, GetMessage } from 'amqplib';
import { errorMessage } from '../core/text/error-message.format.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import { sleep } from '../core/time/duration.timer.js';
import {
  HANDLER_REGISTRY_LOCK,
  HANDLER_REGISTRY_QUEUE,
  isHeldElsewhere,
  REGISTRY_LOCK_RETRY_MS,
  REGISTRY_LOCK_WAIT_MS,
  latestRecords,
  pruneCandidates,
  readHandlerRecord,
  recordedApplications,
  supersededRecords,
  type HandlerRecord,
} from '../core/topology/handler-registry.record.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { tierQueues } from '../core/topology/retry-topology.plan.js';
import { PRIVATE_QUEUE_OPTIONS, queueTypeArgument } from '../core/topology/queue-type.mismatch.js';
import type { ConfirmPublisher } from './confirm.publisher.js';

/** Opens a channel the caller may lose to a broker error (a 404, a 406). */
export type ChannelOpener = () => Promise<Channel>;

/**
 * Makes sure the registry queue exists: declared durable and classic (its type stated, whatever the vhost's default)
 * if missing. One that exists is used whatever its type: a start before types were stated may have made it a quorum
 * queue on a vhost whose default type is quorum, and it serves as well.
 */
async function ensureRegistry(open: ChannelOpener): Promise<void> {
  if (await queueExists(open, HANDLER_REGISTRY_QUEUE)) return;
  const channel = await open();
  try {
    await channel.assertQueue(HANDLER_REGISTRY_QUEUE, { durable: true, arguments: queueTypeArgument('classic') });
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/**
 * Runs `work` while this connection holds the registry's lock (HANDLER_REGISTRY_LOCK), so that no other process reads
 * the registry, which it takes whole and unacked, at the same moment and sees it empty. Waits up to
 * REGISTRY_LOCK_WAIT_MS for another holder, then works without the lock, as readers did before it existed; a user not
 * allowed to declare the lock works without it too. Within one connection the lock excludes nothing.
 */
export async function withRegistryLock<T>(open: ChannelOpener, work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + REGISTRY_LOCK_WAIT_MS;
  let held = false;
  for (;;) {
    const channel = await open();
    try {
      await channel.assertQueue(HANDLER_REGISTRY_LOCK, { ...PRIVATE_QUEUE_OPTIONS });
      held = true;
      await channel.close().catch(() => undefined);
      break;
    } catch (error) {
      // the broker closed the channel; held elsewhere: wait for its read to end, else (403, other) go without the lock
      if (!isHeldElsewhere(error) || Date.now() >= deadline) break;
      await sleep(REGISTRY_LOCK_RETRY_MS);
    }
  }
  try {
    return await work();
  } finally {
    if (held) await releaseRegistryLock(open);
  }
}

async function releaseRegistryLock(open: ChannelOpener): Promise<void> {
  try {
    const channel = await open();
    await channel.deleteQueue(HANDLER_REGISTRY_LOCK);
    await channel.close().catch(() => undefined);
  } catch {
    // the connection is gone, and the exclusive queue with it
  }
}

/**
 * Records a handler queue in the registry: reads the records (unacked), publishes this start's record (confirmed),
 * then removes the older records of the same queue, so the registry keeps one per handler queue, and the records
 * (up to PRUNE_CHECKS_PER_START, oldest first) of queues whose handler and parking queues were both deleted. Records
 * of other queues go back when the channel closes. Should two starts of the same queue race, both records stay until the next
 * start; readers keep the newest of each queue.
 */
export async function recordHandler(open: ChannelOpener, publisher: ConfirmPublisher, entry: HandlerEntry, now = new Date()): Promise<void> {
  await ensureRegistry(open);
  await withRegistryLock(open, () => recordLocked(open, publisher, entry, now));
}

async function recordLocked(open: ChannelOpener, publisher: ConfirmPublisher, entry: HandlerEntry, now: Date): Promise<void> {
  const channel = await open();
  try {
    const seen: GetMessage[] = [];
    for (let message = await getSettled(channel, HANDLER_REGISTRY_QUEUE); message; message = await getSettled(channel, HANDLER_REGISTRY_QUEUE))
      seen.push(message);
    const records = seen.map((message) => readHandlerRecord(message.content));
    const { application, ...fields } = entry;
    const record: HandlerRecord = { ...fields, applications: recordedApplications(records, entry.queue, application), recordedAt: now.toISOString() };
    await publisher.publish('', HANDLER_REGISTRY_QUEUE, Buffer.from(JSON.stringify(record)), { persistent: true, contentType: 'application/json' });
    for (const index of supersededRecords(records, entry.queue)) channel.ack(seen[index]);
    for (const index of pruneCandidates(records, entry.queue)) {
      const { queue, errorQueue } = records[index] as HandlerRecord;
      if (!(await queueExists(open, queue)) && !(await queueExists(open, errorQueue))) channel.ack(seen[index]);
    }
  } finally {
    await channel.close().catch(() => undefined); // unacked records go back, in their order
  }
}

/** What a start records of a queue that parks: the record's fields, and the name of the application that runs it. */
export type HandlerEntry = Omit<HandlerRecord, 'recordedAt' | 'applications'> & { application?: string };

/** The record of a handler queue of the application named `application` (RetryModule option), if named. */
export const handlerEntry = (config: HandlerConfig, application?: string): HandlerEntry => ({
  queue: config.queue,
  errorQueue: config.errorQueue,
  tiers: tierQueues(config),
  queueType: config.queueType === 'quorum' ? 'quorum' : 'classic',
  ...(application !== undefined && { application }),
});

/**
 * Records a queue that parks (a handler's, or the delay ladder's ready queue), logging rather than throwing: a
 * failure (a user allowed to configure only its own queues, a registry declared otherwise) must not stop a start,
 * since the record only helps tools find a queue that `--queue` can name as well.
 */
export async function recordOrWarn(open: ChannelOpener, publisher: ConfirmPublisher, entry: HandlerEntry, logger: RetryLogger): Promise<void> {
  try {
    await recordHandler(open, publisher, entry);
  } catch (error) {
    logger.warn(
      `"${entry.queue}": could not record the queue in the registry "${HANDLER_REGISTRY_QUEUE}" (${errorMessage(error)}); tools must name it`,
    );
  }
}

/** The newest record of every recorded handler queue, left in the registry. None when the registry does not exist. */
export async function readHandlerRegistry(open: ChannelOpener): Promise<HandlerRecord[]> {
  const channel = await open(); // a broker that cannot be reached fails the read, as it should (the page's 502)
  try {
    await channel.checkQueue(HANDLER_REGISTRY_QUEUE);
  } catch {
    return []; // 404: no handler has recorded itself here (the channel is closed by the broker)
  }
  await channel.close().catch(() => undefined);
  return withRegistryLock(open, () => readLocked(open));
}

async function readLocked(open: ChannelOpener): Promise<HandlerRecord[]> {
  const channel = await open();
  try {
    const records: HandlerRecord[] = [];
    for (let message = await getSettled(channel, HANDLER_REGISTRY_QUEUE); message; message = await getSettled(channel, HANDLER_REGISTRY_QUEUE)) {
      const record = readHandlerRecord(message.content);
      if (record) records.push(record);
    }
    return latestRecords(records);
  } finally {
    await channel.close().catch(() => undefined);
  }
}
