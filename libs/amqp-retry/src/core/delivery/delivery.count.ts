import type { QueueType } from '../topology/topology.types.js';
import { readDeathHistory, readStrictInteger, rejectedCount } from './x-death.parser.js';
import { BrokerHeader } from '../headers/header.names.js';
import { copyOwn } from '../headers/own-keys.copy.js';

/**
 * The headers in which a quorum queue counts the unsettled earlier deliveries of a message: `x-delivery-count` (against
 * its delivery limit; 4.0 raises it on every return, 4.3 not for a nack with requeue or a consumer timeout) and
 * `x-acquired-count` (4.3+, every return). docs/rabbitmq-4.md has the table observed on 3.10.8, 4.0.5 and 4.3.6.
 */
export const DELIVERY_COUNT_HEADERS = [BrokerHeader.deliveryCount, BrokerHeader.acquiredCount] as const;

/** A copy of `headers` without the DELIVERY_COUNT_HEADERS, for a message the library publishes again: its next queue counts anew. */
export function withoutDeliveryCounts(headers: object | null | undefined): Record<string, unknown> {
  const copy = copyOwn(headers);
  for (const header of DELIVERY_COUNT_HEADERS) delete copy[header];
  return copy;
}

/** What countedHeaders reads of a delivery (amqplib's ConsumeMessage has it). */
export interface CountedDelivery {
  readonly fields: { readonly redelivered: boolean };
  readonly properties: { readonly headers?: Readonly<Record<string, unknown>> };
}

/**
 * The headers to read a delivery's counts from: none when the broker did not mark it `redelivered`. The broker marks
 * every message it gives back (a nack or reject with requeue, a closed channel, a consumer timeout), on 3.10, 4.0 and
 * 4.3 and whichever of the counts rose, so a delivery not marked was never delivered before, whatever counts a
 * publisher or a copy from another queue carries (3.10 delivers a publisher's `x-delivery-count` as it was sent).
 */
export const countedHeaders = (delivery: CountedDelivery): Readonly<Record<string, unknown>> | undefined =>
  delivery.fields.redelivered ? delivery.properties.headers : undefined;

/**
 * Earlier deliveries of this message that were never settled: the larger of the DELIVERY_COUNT_HEADERS, less
 * `ownReturns` (the application's returns on purpose, see OwnReturns). Only a quorum queue's broker sets them: on a
 * classic queue a publisher may have, so they count 0 there, as does a value that is not a whole number. Give it
 * countedHeaders(delivery), so that a first delivery counts 0.
 */
export function unsettledDeliveries(headers: Readonly<Record<string, unknown>> | undefined, queueType: QueueType, ownReturns = 0): number {
  if (queueType !== 'quorum' || headers === undefined) return 0;
  return Math.max(0, ...DELIVERY_COUNT_HEADERS.map((header) => (readStrictInteger(headers[header]) ?? 0) - ownReturns));
}

/** The broker's own `x-delivery-count` of a quorum queue's delivery (else 0): what its `x-delivery-limit` acts on. */
export function brokerDeliveryCount(headers: Readonly<Record<string, unknown>> | undefined, queueType: QueueType): number {
  if (queueType !== 'quorum' || headers === undefined) return 0;
  return readStrictInteger(headers[BrokerHeader.deliveryCount]) ?? 0;
}

/**
 * Whether the broker of `serverProperties` keeps a quorum queue's delivery count on the messages it dead-letters:
 * RabbitMQ 4.0 to 4.2 (observed on 4.0.5; 4.3 counts no rejection, nor does 3.10.8). There a retry arrives from its tier
 * marked redelivered, with the `x-delivery-count` it left with plus one per rejection (carriedCount), which are
 * attempts, not unsettled deliveries.
 */
export function keepsDeliveryCounts(serverProperties: Readonly<Record<string, unknown>> | undefined): boolean {
  const version = serverProperties?.version;
  return typeof version === 'string' && /^4\.[0-2](?:[.+~-]|$)/.test(version);
}

/**
 * On a broker that keepsDeliveryCounts, the part of a quorum queue delivery's `x-delivery-count` it carried in rather
 * than the queue counted: all of it when it equals `rejections`, the queue's rejections in its `x-death` (a retry from
 * its tier, not returned since), else none: once the queue returns the message, the header is its own count, from 1
 * (observed on 4.0.5), and a count that differs carries returns of an earlier stay, which are counted as returns.
 */
export function carriedCount(headers: Readonly<Record<string, unknown>> | undefined, queueType: QueueType, rejections: number): number {
  const count = brokerDeliveryCount(headers, queueType);
  return count > 0 && count === rejections ? count : 0;
}

/** carriedCount of a delivery whose `x-death` is not read yet (an unreadable one counts no rejection). */
export function carriedCountOf(headers: Readonly<Record<string, unknown>> | undefined, queueType: QueueType, queue: string): number {
  if (brokerDeliveryCount(headers, queueType) === 0) return 0;
  const history = readDeathHistory(headers?.[BrokerHeader.death] ?? []);
  return carriedCount(headers, queueType, history.ok ? rejectedCount(history.deaths, queue) : 0);
}
