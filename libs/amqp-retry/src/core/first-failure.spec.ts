import { FIRST_FAILURE_HEADER, firstFailureHeaders, firstRoute, movedFirstFailures, movedFrom } from './first-failure.js';
import type { XDeath } from './x-death.parser.js';

const from = { exchange: 'shop', routingKey: 'order.created' };

describe('first failures moved into a schedule of their own', () => {
  it('counts the moved failure only on the queue the header names', () => {
    const headers = firstFailureHeaders({ a: 1 }, 'orders', from);
    expect(headers).toMatchObject({ a: 1, [FIRST_FAILURE_HEADER]: 'orders' });
    expect(movedFrom(headers, 'orders')).toEqual(from);
    expect(movedFrom(headers, 'payments')).toBeUndefined();
    expect(movedFirstFailures(headers, 'orders')).toBe(1);
    expect(movedFirstFailures(headers, 'payments')).toBe(0);
  });

  it('counts nothing without the header, or with a value that is not the queue name', () => {
    expect(movedFirstFailures(undefined, 'orders')).toBe(0);
    expect(movedFirstFailures({}, 'orders')).toBe(0);
    expect(movedFirstFailures({ [FIRST_FAILURE_HEADER]: 1 }, 'orders')).toBe(0);
    expect(movedFirstFailures({ [FIRST_FAILURE_HEADER]: ['orders'] }, 'orders')).toBe(0);
  });

  it('does not change the headers it copies', () => {
    const original = { [FIRST_FAILURE_HEADER]: 'other', b: 2 };
    expect(firstFailureHeaders(original, 'orders', from)[FIRST_FAILURE_HEADER]).toBe('orders');
    expect(original[FIRST_FAILURE_HEADER]).toBe('other');
  });
});

describe('the key a delivery was first published with', () => {
  const delivered = { exchange: 'orders.return', routingKey: 'orders.retry.2.1s.abcdef' };
  const rejected: XDeath = { queue: 'orders', reason: 'rejected', count: 2, exchange: 'shop', routingKeys: ['order.paid'] };

  it('is the delivery\'s own on a first attempt, the first rejection\'s after a nack, the moved headers\' after a move', () => {
    expect(firstRoute(undefined, [], 'orders', { exchange: 'shop', routingKey: 'order.paid' })).toEqual({ exchange: 'shop', routingKey: 'order.paid' });
    expect(firstRoute({}, [rejected], 'orders', delivered)).toEqual({ exchange: 'shop', routingKey: 'order.paid' });
    expect(firstRoute({}, [rejected], 'payments', delivered)).toEqual(delivered);
    expect(firstRoute(firstFailureHeaders({}, 'orders', from), [rejected], 'orders', delivered)).toEqual(from);
  });
});
