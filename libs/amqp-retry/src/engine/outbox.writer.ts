import { randomUUID } from 'node:crypto';
import type { OutboxConfig } from '../core/outbox/outbox.config.js';
import { readOutboxMessage, type OutboxMessage } from '../core/outbox/outbox.message.js';

/** What a publish to the outbox wrote: the row's id and the message id the consumer will see. */
export interface OutboxReceipt {
  /** The row's id in the outbox table. */
  id: string;
  /** The message's AMQP message id: the one the consumer sees, and its inbox recognises copies by. */
  messageId: string;
}

/**
 * Writes `message` as a row of the outbox in the caller's transaction `tx`, and NOTIFYs the relays (delivered at
 * commit). With an order key, first waits for any other open transaction writing that key (see orderLock).
 */
export async function writeToOutbox<Tx>(config: OutboxConfig, tx: Tx, message: OutboxMessage): Promise<OutboxReceipt> {
  const record = readOutboxMessage(message, randomUUID);
  const { adapter, sql } = config;
  if (record.orderKey !== null) await adapter.execute(tx, sql.orderLock, [`${config.tableName}:${record.orderKey}`]);
  const { rows } = await adapter.execute(tx, sql.insert, [
    record.exchange,
    record.routingKey,
    record.body,
    JSON.stringify(record.properties),
    record.orderKey,
    record.delayMs,
  ]);
  return { id: String(rows[0]?.id), messageId: record.properties.messageId };
}
