import { unsettledDeliveries, type CountedDelivery } from '../delivery/delivery.count.js';

/**
 * The hand-outs after which a record is refreshed. A queue of records (the plan queue `Q.retry.plan`, the handler
 * registry) is read whole without acking, and the channel's close gives every record back: a quorum queue counts each
 * such read (`x-delivery-count`, and `x-acquired-count` on 4.3+), and RabbitMQ 4.0+ drops a message whose count passes
 * the queue's delivery limit, 20 by default whatever the library declared. Half of it leaves room for readers that
 * read at the same time, or that stop between a read and its refresh.
 */
export const REFRESH_RECORDS_AT = 10;

/** What recordsDueForRefresh reads of a message got from a queue of records (amqplib's GetMessage has it). */
export type ReadRecord = Pick<CountedDelivery, 'properties'>;

/**
 * Whether the records read in one pass are refreshed: all of them at once, in their order, as soon as one was handed
 * out REFRESH_RECORDS_AT times or more. All of them, because a copy goes to the tail of the queue and readers take the
 * last record as the newest: a copy of only some would put an older record behind a newer one. A classic queue sets
 * no count: its records are never refreshed.
 */
export function recordsDueForRefresh(records: readonly ReadRecord[]): boolean {
  return records.some((record) => unsettledDeliveries(record.properties.headers, 'quorum') >= REFRESH_RECORDS_AT);
}

/**
 * Which of the records read in one pass a refresh copies (their positions, in order): each body once, at its last
 * place. Copies of the same body are the same record (a refresh stopped between its publishes and its ack leaves two),
 * and the last record, which readers take as the newest, stays last.
 */
export function recordsToCopy(bodies: readonly Buffer[]): number[] {
  return bodies.flatMap((body, index) => (bodies.slice(index + 1).some((later) => later.equals(body)) ? [] : [index]));
}
