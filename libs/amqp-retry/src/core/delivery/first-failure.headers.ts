import { firstRejection, type XDeath } from './x-death.parser.js';
import { BrokerHeader, FirstFailureHeader, ParkedHeader } from '../headers/header.names.js';
import { replayedRoute, type Route } from './replayed-route.reader.js';
import { withoutDeliveryCounts } from './delivery.count.js';

/*
 * Several retry schedules on one queue (the transport: each pattern may have its own delays). A nack reaches only the
 * queue's own first tier (dead-lettering keeps the publisher's routing key, and the broker cannot read the pattern in
 * the body), so a first failure of a pattern with its own schedule is published to that tier, confirmed, then acked.
 * That copy's `x-death` counts one attempt fewer: FirstFailureHeader.queue stands for the missing one. It counts only
 * on a delivery that has waited in one of the queue's tiers, so a publisher or a replay that sets it costs no attempt.
 */

/** A message's headers, absent when it has none. */
type HeaderTable = Record<string, unknown> | undefined;

/** Attempt bookkeeping that a parked copy (and so a replay) must not carry. */
export const FIRST_FAILURE_HEADERS: readonly string[] = [FirstFailureHeader.queue, FirstFailureHeader.exchange, FirstFailureHeader.routingKey];

/** 1 when the delivery's first failure on `queue` was moved into a tier by publishing, else 0. */
export function movedFirstFailures(headers: HeaderTable, queue: string, deaths: readonly XDeath[]): number {
  if (headers?.[FirstFailureHeader.queue] !== queue) return 0;
  const tierPrefix = `${queue}.retry.`;
  return deaths.some((d) => d.reason === 'expired' && d.queue.startsWith(tierPrefix)) ? 1 : 0;
}

/**
 * The headers of the copy published into a schedule's first tier, without the delivery counts of the queue it leaves.
 * The copy has no `expiration` (it would cut the tier's delay short): the delivery's own is kept as
 * `x-original-expiration`, as the broker keeps it in `x-death`.
 */
export function firstFailureHeaders(headers: HeaderTable, queue: string, delivered: Route, expiration?: unknown): Record<string, unknown> {
  const copy = withoutDeliveryCounts(headers);
  copy[FirstFailureHeader.queue] = queue;
  copy[FirstFailureHeader.exchange] = delivered.exchange;
  copy[FirstFailureHeader.routingKey] = delivered.routingKey;
  if (expiration !== undefined && expiration !== null) copy[ParkedHeader.originalExpiration] = String(expiration);
  return copy;
}

/**
 * The headers of a first failure the dead-letter queue sends on to tier 1 (decideDeadLetter's `retry`): its death
 * history starts afresh, so that the old death the sort took it for is gone, and FirstFailureHeader.queue counts the
 * failure, whose rejection went with the history. `first` is the queue's rejection, which names the route it came by
 * and the expiration it had.
 */
export function retriedFirstFailureHeaders(headers: HeaderTable, queue: string, first: XDeath | undefined): Record<string, unknown> {
  const route = { exchange: first?.exchange ?? '', routingKey: first?.routingKeys[0] ?? queue };
  const copy = firstFailureHeaders(headers, queue, route, first?.originalExpiration);
  for (const header of Object.values(BrokerHeader)) delete copy[header]; // the death headers (the counts are gone already)
  return copy;
}

/** The exchange and routing key a moved delivery was first published with; undefined unless it was moved from `queue`. */
export function movedFrom(headers: HeaderTable, queue: string, deaths: readonly XDeath[]): Route | undefined {
  if (movedFirstFailures(headers, queue, deaths) === 0) return undefined;
  const exchange = headers?.[FirstFailureHeader.exchange];
  const routingKey = headers?.[FirstFailureHeader.routingKey];
  return typeof exchange === 'string' && typeof routingKey === 'string' ? { exchange, routingKey } : undefined;
}

/**
 * The exchange and routing key a delivery on `queue` was first published with (a retry comes back keyed by its tier's
 * name): the moved copy's headers, else the queue's `rejected` entry in `x-death`, else the delivery itself; for a
 * replayed copy, the route its parked copy recorded (replayedRoute).
 */
export function firstRoute(headers: HeaderTable, deaths: readonly XDeath[], queue: string, delivered: Route): Route {
  const first = firstRejection(deaths, queue);
  const reached = movedFrom(headers, queue, deaths) ?? {
    exchange: first?.exchange ?? delivered.exchange,
    routingKey: first?.routingKeys[0] ?? delivered.routingKey,
  };
  return replayedRoute(headers, queue, reached) ?? reached;
}
