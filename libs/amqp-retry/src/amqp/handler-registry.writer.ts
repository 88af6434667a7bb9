import { getAll } from './channel-get.settler.js';
import { withQueueLock } from './queue.lock.js';
import { type ChannelOpener, onOwnChannel, queueExists } from './queue-exists.probe.js';
import { errorMessage } from '../core/text/error-message.format.js';
import type { HandlerConfig } from '../core/config/handler.config.js';
import {
  HANDLER_REGISTRY_LOCK,
  HANDLER_REGISTRY_QUEUE,
  latestRecords,
  pruneCandidates,
  readHandlerRecord,
  recordedApplications,
  supersededRecords,
  type HandlerRecord,
} from '../core/topology/handler-registry.record.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { tierQueues } from '../core/topology/retry-topology.plan.js';
import { queueTypeArgument } from '../core/topology/queue-type.mismatch.js';
import type { ConfirmPublisher } from './confirm.publisher.js';

/** Declares the registry queue, durable and classic, if missing; one that exists serves whatever its type. */
async function ensureRegistry(open: ChannelOpener): Promise<void> {
  if (await queueExists(open, HANDLER_REGISTRY_QUEUE)) return;
  await onOwnChannel(open, (channel) => channel.assertQueue(HANDLER_REGISTRY_QUEUE, { durable: true, arguments: queueTypeArgument('classic') }));
}

/**
 * Runs `work` while this connection holds the registry's lock, so that no other process, reading the registry whole
 * and unacked at the same moment, sees it empty (see withQueueLock).
 */
export const withRegistryLock = <T>(open: ChannelOpener, work: () => Promise<T>): Promise<T> => withQueueLock(open, HANDLER_REGISTRY_LOCK, work);

/**
 * Records a handler queue: reads the records (unacked), publishes this start's (confirmed), then acks the older ones
 * of the same queue and those (a few per start) of queues whose handler and parking queues are both gone; the others
 * go back when the channel closes. Two racing starts leave both records until the next; readers keep the newest.
 */
async function recordLocked(open: ChannelOpener, publisher: ConfirmPublisher, entry: HandlerEntry, now: Date): Promise<void> {
  // The channel's close puts the unacked records back, in their order.
  await onOwnChannel(open, async (channel) => {
    const seen = await getAll(channel, HANDLER_REGISTRY_QUEUE);
    const records = seen.map((message) => readHandlerRecord(message.content));
    const { application, ...fields } = entry;
    const record: HandlerRecord = { ...fields, applications: recordedApplications(records, entry.queue, application), recordedAt: now.toISOString() };
    await publisher.publish('', HANDLER_REGISTRY_QUEUE, Buffer.from(JSON.stringify(record)), { persistent: true, contentType: 'application/json' });
    for (const index of supersededRecords(records, entry.queue)) channel.ack(seen[index]);
    for (const index of pruneCandidates(records, entry.queue)) {
      const { queue, errorQueue } = records[index] as HandlerRecord;
      if (!(await queueExists(open, queue)) && !(await queueExists(open, errorQueue))) channel.ack(seen[index]);
    }
  });
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
 * Records a queue that parks, logging rather than throwing: a failure (a user allowed to configure only its own queues)
 * must not stop a start, since the record only helps tools find a queue that `--queue` can name as well.
 */
export async function recordOrWarn(open: ChannelOpener, publisher: ConfirmPublisher, entry: HandlerEntry, logger: RetryLogger): Promise<void> {
  const now = new Date();
  try {
    await ensureRegistry(open);
    await withRegistryLock(open, () => recordLocked(open, publisher, entry, now));
  } catch (error) {
    logger.warn(
      `"${entry.queue}": could not record the queue in the registry "${HANDLER_REGISTRY_QUEUE}" (${errorMessage(error)}); tools must name it`,
    );
  }
}

/** The newest record of every recorded handler queue, left in the registry. None when the registry does not exist. */
export async function readHandlerRegistry(open: ChannelOpener): Promise<HandlerRecord[]> {
  // A broker that cannot be reached fails the read, as it should (the page's 502). A failed check (a 404): no handler
  // has recorded itself here.
  const registry = await onOwnChannel(open, (channel) => channel.checkQueue(HANDLER_REGISTRY_QUEUE).catch(() => undefined));
  if (!registry) return [];
  return withRegistryLock(open, () => readLocked(open));
}

function readLocked(open: ChannelOpener): Promise<HandlerRecord[]> {
  return onOwnChannel(open, async (channel) => {
    const records = (await getAll(channel, HANDLER_REGISTRY_QUEUE)).map((message) => readHandlerRecord(message.content));
    return latestRecords(records.filter((record) => record !== undefined));
  });
}
