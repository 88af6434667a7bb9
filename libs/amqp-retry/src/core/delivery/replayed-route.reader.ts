import { ParkedHeader } from '../headers/header.names.js';

/** An exchange and a routing key. */
export interface Route {
  exchange: string;
  routingKey: string;
}

/**
 * The route a replayed copy was first published with, read from the parked copy's headers it carries, or undefined
 * when the delivery is not one. A replay (ParkedMessages, the page, the CLI) publishes a parked copy to the queue it
 * failed in by name (the default exchange, the queue's name as routing key), never to the business exchange whose
 * other queues would get it too, and without `x-death`, so that its attempts start afresh: its delivery no longer
 * tells the key the publisher used, which names a body without the transport's envelope. The copy keeps
 * `x-original-exchange` and `x-original-routing-key` for that, and `x-original-queue` names its queue.
 *
 * `reached` is how the delivery reached `queue` as far as the broker tells (its own exchange and key, or those of its
 * first rejection on `queue` after a retry, see firstRoute). The headers count only when that is the default exchange
 * with `queue`'s name, the way a replay publishes, and they name `queue`: a message published anywhere else, or
 * replayed into another queue, keeps the route it came by.
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
