import { ParkedHeader } from '../headers/header.names.js';

/** An exchange and a routing key. */
export interface Route {
  exchange: string;
  routingKey: string;
}

/**
 * The route a replayed copy was first published with, read from the parked copy's headers it carries, or undefined
 * when the delivery is not one. A replay publishes to the queue by name (the default exchange), so its delivery does
 * not tell the key the publisher used (which names a body without the transport's envelope). The headers count only
 * when `reached` (how the broker says it reached `queue`, see firstRoute) is the default exchange with `queue`'s name,
 * and they name `queue`: a message published anywhere else, or replayed into another queue, keeps its route.
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
