import type { QueueType } from '../topology/topology.types.js';
import { readStrictInteger } from './x-death.parser.js';
import { BrokerHeader } from '../headers/header.names.js';

/**
 * The headers in which a quorum queue counts the earlier deliveries of a message that were not settled:
 * - `x-delivery-count`: returns that count against the queue's delivery limit. RabbitMQ 4.0 raises it on every
 *   return (a closed channel, a consumer timeout, a nack or reject with requeue); 4.3 only for a reject with requeue,
 *   a closed channel or a lost connection (not for a nack with requeue, nor for a consumer timeout).
 * - `x-acquired-count` (RabbitMQ 4.3+): every return, whatever the cause, consumer timeouts included.
 * (docs/rabbitmq-4.md has the table observed on 3.10.8, 4.0.5 and 4.3.6.)
 */
export const DELIVERY_COUNT_HEADERS = [BrokerHeader.deliveryCount, BrokerHeader.acquiredCount] as const;

/**
 * Earlier deliveries of this message that were never settled, as the broker counts them: the larger of
 * `x-delivery-count` and `x-acquired-count`, so that a handler that outlives a consumer timeout on RabbitMQ 4.3 (which
 * raises only the second) is counted as one that crashes its process on 4.0. Only a quorum queue's broker sets these
 * headers, so on a classic queue they are whatever a publisher put there and count for nothing (0). The type is the
 * queue's real one: the library states it when it declares the queue and refuses to start on a queue of another type.
 * A value that is not a whole number from 0 counts as 0. `ownReturns`: how many of those returns the application made on
 * purpose (a paused queue, an open circuit: OwnReturns), which count for nothing.
 */
export function unsettledDeliveries(headers: Readonly<Record<string, unknown>> | undefined, queueType: QueueType, ownReturns = 0): number {
  if (queueType !== 'quorum' || headers === undefined) return 0;
  let most = 0;
  for (const header of DELIVERY_COUNT_HEADERS) {
    const count = readStrictInteger(headers[header]);
    if (count !== undefined && count - ownReturns > most) most = count - ownReturns;
  }
  return most;
}

/**
 * The broker's own `x-delivery-count` of a delivery of a quorum queue (0 elsewhere, or unreadable): the count its
 * delivery limit (`x-delivery-limit`) acts on, whoever made the returns.
 */
export function brokerDeliveryCount(headers: Readonly<Record<string, unknown>> | undefined, queueType: QueueType): number {
  if (queueType !== 'quorum' || headers === undefined) return 0;
  return readStrictInteger(headers[BrokerHeader.deliveryCount]) ?? 0;
}
