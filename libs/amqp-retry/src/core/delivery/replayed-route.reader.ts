import { ParkedHeader } from '../headers/header.names.js';

/** An exchange and a routing key. */
export interface Route {
  exchange: string;
  routingKey: string;
}

/**
 * The route a replayed copy was first published with, from the parking headers it carries (a replay publishes to the
 * queue by name, so its delivery does not tell the publisher's key); undefined unless `reached` (see firstRoute) is
 * the default exchange with `queue`'s name and the headers name `queue`.
 * @example replayedRoute({ 'x-original-queue': 'orders', 'x-original-exchange': 'shop', 'x-original-routing-key': 'order.created' }, 'orders', { exchange: '', routingKey: 'orders' }) // { exchange: 'shop', routingKey: 'order.created' }
 */
export function replayedRoute(headers: Record<string, unknown> | undefined, queue: string, reached: Route): Route | undefined {
  if (reached.exchange !== '' || reached.routingKey !== queue) return undefined;
  if (headers?.[ParkedHeader.originalQueue] !== queue) return undefined;
  const routingKey = headers[ParkedHeader.originalRoutingKey];
  if (typeof routingKey !== 'string') return undefined;
  const exchange = headers[ParkedHeader.originalExchange];
  return { exchange: typeof exchange === 'string' ? exchange : '', routingKey };
}
