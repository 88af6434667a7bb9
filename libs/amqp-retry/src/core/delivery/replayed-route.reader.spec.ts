import { firstFailureHeaders, firstRoute } from './first-failure.headers.js';
import { replayedRoute } from './replayed-route.reader.js';
import type { XDeath } from './x-death.parser.js';
import { ParkedHeader } from '../headers/header.names.js';

/** The headers a replay keeps on a copy parked from `orders` (replayPublishOptions). */
const replayed = {
  tenant: 'acme',
  [ParkedHeader.originalExchange]: 'shop',
  [ParkedHeader.originalRoutingKey]: 'order.created',
  [ParkedHeader.originalQueue]: 'orders',
};
/** How a replay reaches `orders`: by its name, through the default exchange. */
const byName = { exchange: '', routingKey: 'orders' };

describe('the route a replayed copy was first published with', () => {
  it('is read from the parked copy’s headers when the copy reached its queue by name', () => {
    expect(replayedRoute(replayed, 'orders', byName)).toEqual({ exchange: 'shop', routingKey: 'order.created' });
    // Published to the default exchange at first: no exchange header written, or an empty one.
    expect(replayedRoute({ ...replayed, [ParkedHeader.originalExchange]: undefined }, 'orders', byName)).toEqual({
      exchange: '',
      routingKey: 'order.created',
    });
  });

  it('is not read for a delivery that came another way, on another queue, or without a usable key', () => {
    expect(replayedRoute(replayed, 'orders', { exchange: 'shop', routingKey: 'order.paid' })).toBeUndefined();
    expect(replayedRoute(replayed, 'orders', { exchange: '', routingKey: 'payments' })).toBeUndefined();
    expect(replayedRoute(replayed, 'orders', { exchange: 'orders.return', routingKey: 'orders' })).toBeUndefined();
    // Replayed into another queue (or forwarded with its headers): that queue's own route stands.
    expect(replayedRoute(replayed, 'payments', { exchange: '', routingKey: 'payments' })).toBeUndefined();
    expect(replayedRoute({ ...replayed, [ParkedHeader.originalQueue]: undefined }, 'orders', byName)).toBeUndefined();
    expect(replayedRoute({ ...replayed, [ParkedHeader.originalRoutingKey]: 7 }, 'orders', byName)).toBeUndefined();
    expect(replayedRoute({ ...replayed, [ParkedHeader.originalRoutingKey]: undefined }, 'orders', byName)).toBeUndefined();
    expect(replayedRoute(undefined, 'orders', byName)).toBeUndefined();
  });

  it('stands for the first route on the replay’s first attempt, its retries and a move into a schedule of its own', () => {
    const route = { exchange: 'shop', routingKey: 'order.created' };
    expect(firstRoute(replayed, [], 'orders', byName)).toEqual(route);
    // Retried: the broker recorded the replay's own route in the queue's rejection.
    const rejected: XDeath = { queue: 'orders', reason: 'rejected', count: 1, exchange: '', routingKeys: ['orders'] };
    const tier: XDeath = { queue: 'orders.retry.1.100ms.abcdef', reason: 'expired', count: 1, exchange: 'orders.dlx', routingKeys: ['x'] };
    const back = { exchange: 'orders.return', routingKey: 'orders.retry.1.100ms.abcdef' };
    expect(firstRoute(replayed, [rejected, tier], 'orders', back)).toEqual(route);
    // Moved into a pattern's own first tier: the moved-copy headers name the replay's route.
    const moved = firstFailureHeaders(replayed, 'orders', byName);
    expect(firstRoute(moved, [tier], 'orders', back)).toEqual(route);
  });

  it('leaves every other delivery’s first route as it was', () => {
    expect(firstRoute(replayed, [], 'orders', { exchange: 'shop', routingKey: 'order.paid' })).toEqual({
      exchange: 'shop',
      routingKey: 'order.paid',
    });
    expect(firstRoute({}, [], 'orders', byName)).toEqual(byName); // sent to the queue by name, never parked
  });
});
