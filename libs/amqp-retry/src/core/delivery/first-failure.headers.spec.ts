import { firstFailureHeaders, firstRoute, movedFirstFailures, movedFrom } from './first-failure.headers.js';
import type { XDeath } from './x-death.parser.js';
import { FirstFailureHeader } from '../headers/header.names.js';

const from = { exchange: 'shop', routingKey: 'order.created' };
/** What a moved copy's history holds once it has waited in its first tier. */
const waited: XDeath[] = [{ queue: 'orders.retry.1.200ms.abcdef', reason: 'expired', count: 1, exchange: 'orders.dlx', routingKeys: ['x'] }];

describe('first failures moved into a schedule of their own', () => {
  it('counts the moved failure only on the queue the header names', () => {
    const headers = firstFailureHeaders({ a: 1 }, 'orders', from);
    expect(headers).toMatchObject({ a: 1, [FirstFailureHeader.queue]: 'orders' });
    expect(movedFrom(headers, 'orders', waited)).toEqual(from);
    expect(movedFrom(headers, 'payments', waited)).toBeUndefined();
    expect(movedFirstFailures(headers, 'orders', waited)).toBe(1);
    expect(movedFirstFailures(headers, 'payments', waited)).toBe(0);
  });

  it("leaves the delivery counts of the queue it leaves behind: the tier's copy counts anew", () => {
    const headers = firstFailureHeaders({ a: 1, 'x-delivery-count': 3, 'x-acquired-count': 5 }, 'orders', from);
    expect(Object.keys(headers).sort()).toEqual(['a', FirstFailureHeader.exchange, FirstFailureHeader.queue, FirstFailureHeader.routingKey].sort());
  });

  it("keeps the delivery's expiration as x-original-expiration, since the moved copy has none", () => {
    expect(firstFailureHeaders({}, 'orders', from, '60000')).toMatchObject({ 'x-original-expiration': '60000' });
    expect(firstFailureHeaders({}, 'orders', from)).not.toHaveProperty(['x-original-expiration']);
  });

  it('counts nothing without the header, or with a value that is not the queue name', () => {
    expect(movedFirstFailures(undefined, 'orders', waited)).toBe(0);
    expect(movedFirstFailures({}, 'orders', waited)).toBe(0);
    expect(movedFirstFailures({ [FirstFailureHeader.queue]: 1 }, 'orders', waited)).toBe(0);
    expect(movedFirstFailures({ [FirstFailureHeader.queue]: ['orders'] }, 'orders', waited)).toBe(0);
  });

  it("counts nothing on a delivery that never expired from one of the queue's tiers (a forged or copied header)", () => {
    const headers = firstFailureHeaders({}, 'orders', from);
    expect(movedFirstFailures(headers, 'orders', [])).toBe(0);
    expect(movedFrom(headers, 'orders', [])).toBeUndefined();
    const elsewhere: XDeath[] = [{ ...waited[0], queue: 'payments.retry.1.200ms.abcdef' }];
    expect(movedFirstFailures(headers, 'orders', elsewhere)).toBe(0);
    const rejected: XDeath[] = [{ ...waited[0], reason: 'rejected' }];
    expect(movedFirstFailures(headers, 'orders', rejected)).toBe(0);
  });

  it('does not change the headers it copies', () => {
    const original = { [FirstFailureHeader.queue]: 'other', b: 2 };
    expect(firstFailureHeaders(original, 'orders', from)[FirstFailureHeader.queue]).toBe('orders');
    expect(original[FirstFailureHeader.queue]).toBe('other');
  });
});

describe('the key a delivery was first published with', () => {
  const delivered = { exchange: 'orders.return', routingKey: 'orders.retry.2.1s.abcdef' };
  const rejected: XDeath = { queue: 'orders', reason: 'rejected', count: 2, exchange: 'shop', routingKeys: ['order.paid'] };

  it("is the delivery's own on a first attempt, the first rejection's after a nack, the moved headers' after a move", () => {
    expect(firstRoute(undefined, [], 'orders', { exchange: 'shop', routingKey: 'order.paid' })).toEqual({
      exchange: 'shop',
      routingKey: 'order.paid',
    });
    expect(firstRoute({}, [rejected], 'orders', delivered)).toEqual({ exchange: 'shop', routingKey: 'order.paid' });
    expect(firstRoute({}, [rejected], 'payments', delivered)).toEqual(delivered);
    expect(firstRoute(firstFailureHeaders({}, 'orders', from), [rejected, ...waited], 'orders', delivered)).toEqual(from);
  });
});
