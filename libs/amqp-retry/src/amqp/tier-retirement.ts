import type { Channel } from 'amqplib';
import { readPlanRecord, planTierRetirement, type RetryPlanRecord } from '../core/retry-plan.record.js';
import { retryNames } from '../core/retry-topology.plan.js';
import type { AmqpConnection } from './amqp-connection.js';
import type { ConfirmPublisher } from './confirm.publisher.js';

/** What a start did with the tiers of earlier configurations. */
export interface Retirement {
  /** Deleted: they were empty. */
  deleted: string[];
  /** Unbound from the first-failure exchange but still holding messages; deleted by a later start once empty. */
  draining: string[];
}

/** Runs one operation that may make the broker close the channel (a 404, a 406) on a channel of its own. */
async function attempt(connection: AmqpConnection, operation: (channel: Channel) => Promise<unknown>): Promise<boolean> {
  const channel = await connection.createChannel('tier retirement', true);
  try {
    await operation(channel);
    return true;
  } catch {
    return false;
  } finally {
    await channel.close().catch(() => undefined); // closed by the broker already
  }
}

/**
 * Retires the tiers that earlier configurations of this handler left, using the plan queue as the record: read
 * every record there, cut the old first tier off the first-failure exchange, delete the old tiers that are empty,
 * write the new record, and only then ack the old ones. Every step is idempotent and the records are acked last, so
 * a start that fails half-way leaves a record that the next start completes.
 */
export async function retireOldTiers(connection: AmqpConnection, publisher: ConfirmPublisher, queue: string, tiers: string[]): Promise<Retirement> {
  const names = retryNames(queue);
  const reader = await connection.createChannel('retry plan record');
  try {
    const records: RetryPlanRecord[] = [];
    for (let message = await reader.get(names.planQueue); message; message = await reader.get(names.planQueue)) {
      const record = readPlanRecord(message.content);
      if (record) records.push(record);
    }
    const previous = records.length ? { tiers: records.flatMap((r) => r.tiers), retiring: records.flatMap((r) => r.retiring) } : undefined;
    const retirement: Retirement = { deleted: [], draining: [] };
    for (const tier of planTierRetirement(previous, tiers)) {
      const exists = await attempt(connection, (channel) => channel.unbindQueue(tier, names.firstFailureExchange, ''));
      if (!exists) continue; // gone already
      const deleted = await attempt(connection, (channel) => channel.deleteQueue(tier, { ifEmpty: true }));
      retirement[deleted ? 'deleted' : 'draining'].push(tier);
    }
    const record: RetryPlanRecord = { tiers, retiring: retirement.draining };
    await publisher.publish('', names.planQueue, Buffer.from(JSON.stringify(record)), { persistent: true, contentType: 'application/json' });
    reader.ackAll();
    return retirement;
  } finally {
    await reader.close().catch(() => undefined);
  }
}
