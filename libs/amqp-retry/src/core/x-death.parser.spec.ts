import { firstRejection, parseXDeath, rejectedCount, unsettledDeliveries } from './x-death.parser.js';

const entry = (over: Record<string, unknown> = {}) => ({
  queue: 'orders',
  reason: 'rejected',
  count: 2,
  exchange: 'shop',
  'routing-keys': ['order.created'],
  time: { '!': 'timestamp', value: 1_700_000_000 },
  ...over,
});

describe('parseXDeath', () => {
  it('reads a broker-shaped header', () => {
    expect(parseXDeath([entry()])).toEqual([
      {
        queue: 'orders',
        reason: 'rejected',
        count: 2,
        exchange: 'shop',
        routingKeys: ['order.created'],
        time: new Date(1_700_000_000_000),
      },
    ]);
  });

  it.each([[undefined], [null], ['x-death'], [42], [{ queue: 'orders' }], [new Map()]])('returns [] for a non-array %p', (header) => {
    expect(parseXDeath(header)).toEqual([]);
  });

  it('skips entries that are not tables or lack queue, reason or a valid count', () => {
    const header = [
      null,
      'text',
      [entry()],
      entry({ queue: 7 }),
      entry({ reason: undefined }),
      entry({ count: -1 }),
      entry({ count: 1.5 }),
      entry({ count: 'many' }),
      entry({ count: Number.NaN }),
      entry({ count: Number.MAX_SAFE_INTEGER + 10 }),
      entry({ count: 3 }),
    ];
    expect(parseXDeath(header).map((d) => d.count)).toEqual([3]);
  });

  it.each([
    [5, 5],
    ['5', 5],
    [BigInt(5), 5],
    [{ '!': 'long', value: 5 }, 5],
  ])('accepts count %p', (count, expected) => {
    expect(parseXDeath([entry({ count })])[0].count).toBe(expected);
  });

  it('tolerates odd optional fields', () => {
    const [death] = parseXDeath([entry({ exchange: 9, 'routing-keys': ['a', 3, null, 'b'], time: 'yesterday' })]);
    expect(death.exchange).toBeUndefined();
    expect(death.routingKeys).toEqual(['a', 'b']);
    expect(death.time).toBeUndefined();
  });
});

describe('rejectedCount', () => {
  it('counts only the {queue, rejected} entry, wherever it stands', () => {
    const deaths = parseXDeath([
      entry({ queue: 'orders.retry.1', reason: 'expired', count: 9 }),
      entry({ queue: 'billing', count: 7 }),
      entry({ count: 4 }),
    ]);
    expect(rejectedCount(deaths, 'orders')).toBe(4);
    expect(rejectedCount(deaths, 'billing')).toBe(7);
    expect(rejectedCount(deaths, 'shipping')).toBe(0);
  });

  it('takes the larger count of a duplicated entry instead of adding them', () => {
    expect(rejectedCount(parseXDeath([entry({ count: 2 }), entry({ count: 3 })]), 'orders')).toBe(3);
  });

  it('is 0 without deaths', () => {
    expect(rejectedCount([], 'orders')).toBe(0);
  });
});

describe('firstRejection', () => {
  it('finds the entry of the queue, not the first in the array', () => {
    const deaths = parseXDeath([entry({ queue: 'orders.retry.1', reason: 'expired', exchange: 'orders.dlx' }), entry()]);
    expect(firstRejection(deaths, 'orders')?.exchange).toBe('shop');
  });
});

describe('unsettledDeliveries', () => {
  it.each([
    [undefined, 0],
    [{}, 0],
    [{ 'x-delivery-count': 3 }, 3],
    [{ 'x-delivery-count': '4' }, 4],
    [{ 'x-delivery-count': -1 }, 0],
    [{ 'x-delivery-count': 'many' }, 0],
  ])('reads %p as %p', (headers, count) => {
    expect(unsettledDeliveries(headers as Record<string, unknown> | undefined)).toBe(count);
  });
});
