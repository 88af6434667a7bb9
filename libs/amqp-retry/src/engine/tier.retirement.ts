import { getSettled } from '../amqp/channel-get.settler.js';
import { onOwnChannel } from '../amqp/queue-exists.probe.js';
import { withQueueLock } from '../amqp/queue.lock.js';
import { readRecordMessages } from '../amqp/record.refresher.js';
import type { Channel } from 'amqplib';
import type { HandlerConfig } from '../core/config/handler.config.js';
import { planRetirement, readPlanRecord, scheduleIdOf, screenPlanRecords, type RetryPlanRecord } from '../core/topology/retry-plan.record.js';
import { retryNames, tierQueues } from '../core/topology/retry-topology.plan.js';
import type { AmqpConnection } from '../amqp/amqp.connection.js';
import type { ConfirmPublisher } from '../amqp/confirm.publisher.js';

/** What a start did with the tiers of other schedules. */
export interface Retirement {
  /** Deleted: nobody ran their schedule and they were empty. */
  deleted: string[];
  /** Nobody runs their schedule, but they still hold messages; deleted by a later start once empty. */
  draining: string[];
  /** Another running version uses them: left as they are. */
  kept: string[];
  /** Records in the plan queue that named queues other than tiers of the handler's queue: ignored (see screenPlanRecords), then removed. */
  ignored: { records: number; names: string[] };
}

/**
 * Runs `use` on a channel of its own, then closes the channel whatever happened (a broker error, a 404 or a 406, may
 * have closed it already). `expectClose`: its broker closes are not logged (see AmqpConnection.createChannel).
 */
export const onChannel = <T>(connection: AmqpConnection, purpose: string, use: (c: Channel) => Promise<T>, expectClose = false): Promise<T> =>
  onOwnChannel(() => connection.createChannel(purpose, expectClose), use);

/** Runs one operation that may make the broker close the channel (a 404, a 406) on a channel of its own; undefined when it fails. */
const attempt = <T>(connection: AmqpConnection, operation: (channel: Channel) => Promise<T>): Promise<T | undefined> =>
  onChannel(connection, 'tier retirement', (channel) => operation(channel).catch(() => undefined), true);

/**
 * Every record in the plan queue, left there (the channel closes without acking them, or they are refreshed: see
 * readRecordMessages), and how many messages stand for them in the queue. Only records that name tiers of the
 * handler's queue alone are returned; `ignored` tells what the others were (see screenPlanRecords).
 */
function readRecords(
  connection: AmqpConnection,
  handler: HandlerConfig,
): Promise<RetryPlanRecord[] & { messages: number; ignored: Retirement['ignored'] }> {
  const { planQueue, deadLetterQueue } = retryNames(handler.queue);
  return onOwnChannel(
    () => connection.createConfirmChannel(),
    async (reader) => {
      const { messages, held } = await readRecordMessages(reader, planQueue);
      const read = messages.map((message) => readPlanRecord(message.content));
      const { records, ignored, refused } = screenPlanRecords(
        read.filter((record) => record !== undefined),
        handler.queue,
        [handler.errorQueue, handler.deadLetterQueue ?? deadLetterQueue],
      );
      return Object.assign(records, { messages: held, ignored: { records: ignored, names: refused } });
    },
  );
}

/**
 * Runs `work` while this connection holds the plan queue's lock (`Q.retry.plan.lock`, see withQueueLock): a start's
 * read, write and removal of the records, and a reconnection's read and refresh, never run at the same time as another
 * instance's, which would hide records from it, or take a record written in between for an old one.
 */
const withPlanLock = <T>(connection: AmqpConnection, planQueue: string, work: () => Promise<T>): Promise<T> =>
  withQueueLock(() => connection.createChannel('retry plan lock', true), `${planQueue}.lock`, work);

/**
 * Takes first failures for this start's tiers and retires the tiers of schedules nobody runs any more, using the plan
 * queue as the record: read every record; move the first-failure binding to our first tier; cut the retired tiers off
 * the dead-letter exchange and delete those that are empty; write the new record; only then consume the old ones.
 * Every step is idempotent, so a start that fails half-way leaves a record the next completes. A schedule whose
 * presence queue has a consumer is run by another version (a rolling deploy): its tiers are kept. All of it runs under
 * the plan lock (withPlanLock).
 *
 * Quorum queues cannot be deleted "if empty" (the broker answers 540 and closes the connection): they are deleted
 * after a check shows them empty, safe because nothing can enter them once unbound.
 */
export function takeOverFirstFailures(connection: AmqpConnection, publisher: ConfirmPublisher, handler: HandlerConfig): Promise<Retirement> {
  const names = retryNames(handler.queue);
  return withPlanLock(connection, names.planQueue, async () => {
    const own = tierQueues(handler);
    const records = await readRecords(connection, handler);
    const candidates = [...new Set(records.flatMap((r) => [r.tiers, ...r.others]).map(scheduleIdOf))];
    const live = new Set<string>();
    for (const id of candidates) {
      if (id === scheduleIdOf(own)) continue;
      const presence = await attempt(connection, (channel) => channel.checkQueue(names.presenceQueue(id)));
      if (presence && presence.consumerCount > 0) live.add(id);
    }
    const plan = planRetirement(records, own, live);
    // Cut the others, then bind ours: never two bound at once (a first failure would be copied into both). A failure
    // in the moment between would be dropped on classic queues, so all of it runs on one channel, back to back.
    await bindOnlyOurs(connection, names.firstTierExchange, plan.unbindFirst, own[0]);
    // First tiers bound straight to the first-failure exchange (a topology without the death sort): cut
    // them only now that ours takes first failures through the sort, so that none falls between the two. An unbind of
    // a binding that is not there changes nothing.
    for (const tier of new Set([...plan.unbindFirst, own[0]])) {
      await attempt(connection, (channel) => channel.unbindQueue(tier, names.firstFailureExchange, ''));
    }

    const retirement: Retirement = { deleted: [], draining: [], kept: plan.keep.flat(), ignored: records.ignored };
    for (const tier of plan.retire) {
      const unbound = await attempt(connection, (channel) => channel.unbindQueue(tier, names.deadLetterExchange, tier));
      if (unbound === undefined) continue; // gone already
      const deleted = await attempt(connection, async (channel) => {
        if (handler.queueType !== 'quorum') return channel.deleteQueue(tier, { ifEmpty: true });
        const { messageCount } = await channel.checkQueue(tier);
        if (messageCount > 0) throw new Error('not empty');
        return channel.deleteQueue(tier);
      });
      retirement[deleted ? 'deleted' : 'draining'].push(tier);
    }
    const record: RetryPlanRecord = { tiers: own, others: plan.keep, retiring: retirement.draining };
    await publisher.publish('', names.planQueue, Buffer.from(JSON.stringify(record)), { persistent: true, contentType: 'application/json' });
    await consumeRecords(connection, names.planQueue, records.messages);
    return retirement;
  });
}

/** Unbinds `others` from the first-failure exchange (gone already is fine), then binds `ours`: that must succeed. */
function bindOnlyOurs(connection: AmqpConnection, exchange: string, others: readonly string[], ours: string): Promise<void> {
  return onChannel(connection, 'retry topology declaration', async (channel) => {
    // Unbinding a binding that does not exist is a no-op; a queue deleted since answers 404 and closes the channel,
    // so each unbind that fails is tried alone.
    for (const tier of others) {
      try {
        await channel.unbindQueue(tier, exchange, '');
      } catch {
        await channel.close().catch(() => undefined);
        return bindOnlyOurs(connection, exchange, others.slice(others.indexOf(tier) + 1), ours);
      }
    }
    await channel.bindQueue(ours, exchange, '');
  });
}

/** Takes the `count` records read before the new one was written (they are at the head of the queue). */
function consumeRecords(connection: AmqpConnection, planQueue: string, count: number): Promise<void> {
  return onChannel(connection, 'retry plan record', async (channel) => {
    for (let i = 0; i < count; i++) if (!(await getSettled(channel, planQueue, { noAck: true }))) return;
  });
}

/**
 * After a reconnection: binds our first tier to the first-failure exchange again only if the newest record is ours,
 * so that a reconnection never takes first failures back from a newer version (whose start, holding the plan lock,
 * cannot run between the read and the bind).
 */
export function rebindFirstFailuresIfOwner(connection: AmqpConnection, handler: HandlerConfig): Promise<void> {
  const names = retryNames(handler.queue);
  const own = tierQueues(handler);
  return withPlanLock(connection, names.planQueue, async () => {
    const newest = (await readRecords(connection, handler)).at(-1);
    if (newest && scheduleIdOf(newest.tiers) !== scheduleIdOf(own)) return;
    await onChannel(connection, 'retry topology declaration', (channel) => channel.bindQueue(own[0], names.firstTierExchange, ''));
  });
}
