import { queueExists } from './queue-exists.js';
import type { Channel, GetMessage } from 'amqplib';
import { errorMessage } from '../core/error-message.js';
import type { HandlerConfig } from '../core/handler-config.js';
import {
  HANDLER_REGISTRY_QUEUE,
  latestRecords,
  pruneCandidates,
  readHandlerRecord,
  recordedApplications,
  supersededRecords,
  type HandlerRecord,
} from '../core/handler-registry.record.js';
import type { RetryLogger } from '../core/retry-logger.js';
import { tierQueues } from '../core/retry-topology.plan.js';
import type { ConfirmPublisher } from './confirm.publisher.js';

/** Opens a channel the caller may lose to a broker error (a 404, a 406). */
export type ChannelOpener = () => Promise<Channel>;

/** Declares the registry queue: durable, classic, no arguments. */
const declareRegistry = (channel: Channel) => channel.assertQueue(HANDLER_REGISTRY_QUEUE, { durable: true });

/**
 * Records a handler queue in the registry: reads the records (unacked), publishes this start's record (confirmed),
 * then removes the older records of the same queue, so the registry keeps one per handler queue, and the records
 * (up to PRUNE_CHECKS_PER_START, oldest first) of queues whose handler and parking queues were both deleted. Records
 * of other queues go back when the channel closes. Should two starts of the same queue race, both records stay until the next
 * start; readers keep the newest of each queue.
 */
export async function recordHandler(open: ChannelOpener, publisher: ConfirmPublisher, entry: HandlerEntry, now = new Date()): Promise<void> {
  const channel = await open();
  try {
    await declareRegistry(channel);
    const seen: GetMessage[] = [];
    for (let message = await channel.get(HANDLER_REGISTRY_QUEUE); message; message = await channel.get(HANDLER_REGISTRY_QUEUE)) seen.push(message);
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
  const channel = await open();
  try {
    await channel.checkQueue(HANDLER_REGISTRY_QUEUE);
  } catch {
    return []; // 404: no handler has recorded itself here (the channel is closed by the broker)
  }
  try {
    const records: HandlerRecord[] = [];
    for (let message = await channel.get(HANDLER_REGISTRY_QUEUE); message; message = await channel.get(HANDLER_REGISTRY_QUEUE)) {
      const record = readHandlerRecord(message.content);
      if (record) records.push(record);
    }
    return latestRecords(records);
  } finally {
    await channel.close().catch(() => undefined);
  }
}
