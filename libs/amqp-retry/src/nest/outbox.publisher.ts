import { Injectable } from '@nestjs/common';
import type { OutboxMessage } from '../core/outbox/outbox.message.js';
import type { OutboxTransaction } from '../core/outbox/outbox.adapter.js';
import { RetryEngine } from '../engine/retry.engine.js';
import type { OutboxReceipt } from '../engine/outbox.side.js';

/**
 * Publishes through the transactional outbox (RetryModule option `outbox`; docs/outbox.md): the message is written
 * in your transaction, so it exists if and only if your change commits, and the relay publishes it after the commit.
 */
@Injectable()
export class OutboxPublisher {
  constructor(private readonly engine: RetryEngine) {}

  /**
   * Writes the message in the transaction `tx` (what the outbox's adapter takes: a pg PoolClient after BEGIN, a
   * TypeORM EntityManager of `dataSource.transaction()`...). Resolves with the row's id and what the relay will send (OutboxReceipt); rejects
   * (and your transaction should roll back) on a malformed message or a database error. A `tx` in no transaction (a
   * pool, a client without BEGIN, a Knex instance) is refused, with nothing written: its row would commit on its own.
   * A pool or a Knex instance does not compile (see OutboxTransaction).
   * @example await outbox.publish(client, { exchange: 'orders', routingKey: 'order.created', body: order, orderKey: order.customerId });
   */
  publish<Tx>(tx: OutboxTransaction<Tx>, message: OutboxMessage): Promise<OutboxReceipt> {
    return this.engine.writeToOutbox(tx, message);
  }
}
