/**
 * Several retry schedules on one queue (the transport: each pattern may have its own delays). The queue's own
 * schedule takes first failures the pure-broker way: a nack, which the dead-letter exchange's alternate exchange
 * routes to its first tier. Another schedule's first tier cannot be reached by a nack (dead-lettering keeps the
 * publisher's routing key, and the broker cannot read the pattern in the body), so a first failure of a pattern with
 * its own schedule is published to that tier, confirmed, and only then acked. That copy was never rejected by the
 * queue, so its `x-death` counts one attempt fewer: this header, naming the queue, stands for the missing one.
 * From the second failure on, the tier's own dead-letter routing key names the next tier and a nack suffices.
 *
 * A publisher could forge the header: it then costs the message one attempt, never more.
 */
export const FIRST_FAILURE_HEADER = 'x-retry-first-failure';
/** Where the moved message was first published, which its `x-death` no longer tells (its first rejection names the tier). */
const FIRST_EXCHANGE_HEADER = 'x-retry-first-exchange';
const FIRST_ROUTING_KEY_HEADER = 'x-retry-first-routing-key';
/** Attempt bookkeeping that a parked copy (and so a replay) must not carry. */
export const FIRST_FAILURE_HEADERS: readonly string[] = [FIRST_FAILURE_HEADER, FIRST_EXCHANGE_HEADER, FIRST_ROUTING_KEY_HEADER];

/** 1 when the delivery's first failure on `queue` was moved into a tier by publishing, else 0. */
export function movedFirstFailures(headers: Record<string, unknown> | undefined, queue: string): number {
  return headers?.[FIRST_FAILURE_HEADER] === queue ? 1 : 0;
}

/** The headers of the copy published into a schedule's first tier, for a delivery published to `exchange` with `routingKey`. */
export function firstFailureHeaders(
  headers: Record<string, unknown> | undefined,
  queue: string,
  delivered: { exchange: string; routingKey: string },
): Record<string, unknown> {
  return { ...headers, [FIRST_FAILURE_HEADER]: queue, [FIRST_EXCHANGE_HEADER]: delivered.exchange, [FIRST_ROUTING_KEY_HEADER]: delivered.routingKey };
}

/** The exchange and routing key a moved delivery was first published with; undefined unless it was moved from `queue`. */
export function movedFrom(headers: Record<string, unknown> | undefined, queue: string): { exchange: string; routingKey: string } | undefined {
  if (movedFirstFailures(headers, queue) === 0) return undefined;
  const exchange = headers?.[FIRST_EXCHANGE_HEADER];
  const routingKey = headers?.[FIRST_ROUTING_KEY_HEADER];
  return typeof exchange === 'string' && typeof routingKey === 'string' ? { exchange, routingKey } : undefined;
}
