import { randomUUID } from 'node:crypto';
import type { Options } from 'amqplib';
import type { OutboxConfig } from '../core/outbox/outbox.config.js';
import { readOutboxMessage, type OutboxMessage } from '../core/outbox/outbox.message.js';

/**
 * What a publish to the outbox wrote, to log, store or correlate: the row's id and the message as the relay will send it
 * after the commit (the same fields as `RetryPublisher.publish`'s `PublishedMessage`).
 */
export interface OutboxReceipt {
  /** The row's id in the outbox table. */
  id: string;
  /** The message's AMQP message id: the one the consumer sees, and its inbox recognises copies by. */
  messageId: string;
  /** The exchange the relay publishes it to ('' for the default exchange). */
  exchange: string;
  /** The routing key the relay publishes it with. */
  routingKey: string;
  /** How long after the row's insert it is delivered, in ms (through the delay ladder); 0 for at once. */
  delayMs: number;
  /** The AMQP properties the relay publishes it with: those given, with the defaults filled in (message id, persistent, content type). */
  properties: Readonly<Options.Publish>;
}

/**
 * Writes `message` as a row of the outbox in the caller's transaction `tx`, and NOTIFYs the relays (at commit). With an
 * order key, first waits for any other open transaction writing that key. Throws, having written nothing, when `tx`
 * is in no transaction block (the insert then finds no writeMark, and adds no row).
 */
export async function writeToOutbox<Tx>(config: OutboxConfig, tx: Tx, message: OutboxMessage): Promise<OutboxReceipt> {
  const { exchange, routingKey, body, properties, orderKey, delayMs } = readOutboxMessage(message, randomUUID);
  const { adapter, sql } = config;
  if (orderKey === null) await adapter.execute(tx, sql.writeMark, []);
  else await adapter.execute(tx, sql.writeMarkAndOrderLock, [`${config.tableName}:${orderKey}`]);
  const { rows } = await adapter.execute(tx, sql.insert, [exchange, routingKey, body, JSON.stringify(properties), orderKey, delayMs]);
  if (rows.length === 0) {
    throw new Error(
      `OutboxPublisher.publish: the transaction given is in no transaction block (a connection pool, a client without BEGIN, a Knex instance), so the row would commit on its own: nothing was written to ${config.tableName}. Pass what your transaction runs on: a pg client after BEGIN, the manager of dataSource.transaction(), the trx of knex.transaction()`,
    );
  }
  return { id: String(rows[0].id), messageId: properties.messageId, exchange, routingKey, delayMs, properties };
}
