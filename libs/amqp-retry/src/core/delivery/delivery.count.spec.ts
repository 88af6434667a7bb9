import { carriedCount, carriedCountOf, keepsDeliveryCounts, unsettledDeliveries } from './delivery.count.js';

describe('unsettledDeliveries', () => {
  it.each([
    [undefined, 0],
    [{}, 0],
    [{ 'x-delivery-count': 0 }, 0],
    [{ 'x-delivery-count': 3 }, 3],
    [{ 'x-delivery-count': { '!': 'long', value: 4 } }, 4],
    [{ 'x-delivery-count': '4' }, 0],
    [{ 'x-delivery-count': BigInt(4) }, 0],
    [{ 'x-delivery-count': -1 }, 0],
    [{ 'x-delivery-count': 2.5 }, 0],
    [{ 'x-delivery-count': 2 ** 60 }, 0],
    [{ 'x-delivery-count': 'many' }, 0],
    [{ 'x-delivery-count': null }, 0],
    [{ 'x-delivery-count': [3] }, 0],
  ])('reads %p on a quorum queue as %p', (headers, count) => {
    expect(unsettledDeliveries(headers as Record<string, unknown> | undefined, 'quorum')).toBe(count);
  });

  it.each([
    // RabbitMQ 4.3, consumer timeouts: only x-acquired-count rises.
    [{ 'x-acquired-count': 7 }, 7],
    // 4.3, nacks with requeue then a closed channel: the acquisitions are ahead of the delivery count.
    [{ 'x-delivery-count': 2, 'x-acquired-count': 6 }, 6],
    // 4.0 has no x-acquired-count.
    [{ 'x-delivery-count': 9 }, 9],
    [{ 'x-delivery-count': 5, 'x-acquired-count': 'lots' }, 5],
    [{ 'x-delivery-count': -3, 'x-acquired-count': { '!': 'long', value: 10 } }, 10],
  ])('takes the larger of x-delivery-count and x-acquired-count: %p is %p', (headers, count) => {
    expect(unsettledDeliveries(headers, 'quorum')).toBe(count);
  });

  it('ignores both headers on a classic queue, where any publisher can set them', () => {
    expect(unsettledDeliveries({ 'x-delivery-count': 50, 'x-acquired-count': 50 }, 'classic')).toBe(0);
    expect(unsettledDeliveries(undefined, 'classic')).toBe(0);
  });
});

describe('keepsDeliveryCounts and carriedCount', () => {
  it('takes RabbitMQ 4.0 to 4.2 for brokers that keep counts through dead-lettering, and no other version', () => {
    for (const version of ['4.0.5', '4.0.0', '4.1.2', '4.2.9', '4.0', '4.2.0-rc.1'])
      expect([version, keepsDeliveryCounts({ version })]).toEqual([version, true]);
    for (const version of ['4.3.6', '4.3.0', '3.10.8', '3.13.7', '40.0.1', '4.00', undefined, 40]) {
      expect([version, keepsDeliveryCounts({ version })]).toEqual([version, false]);
    }
    expect(keepsDeliveryCounts(undefined)).toBe(false);
  });

  it("takes the whole count as carried when it equals the queue's rejections, none when it differs or on a classic queue", () => {
    const death = (queue: string, reason: string, count: number) => ({ queue, reason, count, exchange: 'shop', 'routing-keys': ['k'] });
    const deaths = [death('orders', 'rejected', 4), death('orders.retry.1', 'expired', 4), death('other', 'rejected', 9)];
    expect(carriedCount({ 'x-delivery-count': 4 }, 'quorum', 4)).toBe(4);
    expect(carriedCount({ 'x-delivery-count': 2 }, 'quorum', 4)).toBe(0); // the queue's own count: given back twice
    expect(carriedCount({ 'x-delivery-count': 4 }, 'classic', 4)).toBe(0);
    expect(carriedCountOf({ 'x-delivery-count': 4, 'x-death': deaths }, 'quorum', 'orders')).toBe(4);
    expect(carriedCountOf({ 'x-delivery-count': 9, 'x-death': deaths }, 'quorum', 'orders')).toBe(0);
    expect(carriedCountOf({ 'x-delivery-count': 1, 'x-death': 'forged' }, 'quorum', 'orders')).toBe(0);
    expect(carriedCountOf({}, 'quorum', 'orders')).toBe(0);
    expect(carriedCountOf(undefined, 'quorum', 'orders')).toBe(0);
  });
});
