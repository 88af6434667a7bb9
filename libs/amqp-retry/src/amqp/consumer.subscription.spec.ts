import type { ConsumeMessage } from 'amqplib';
import type { AckBatcher } from './ack.batcher.js';
import { Delivery, HeldDeliveries } from './consumer.subscription.js';

const deliveryOf = (tag: number) => new Delivery({ fields: { deliveryTag: tag } } as ConsumeMessage, {} as AckBatcher);
const tags = (held: HeldDeliveries) => [...held].map((d) => d.message.fields.deliveryTag);

describe('HeldDeliveries', () => {
  it('keeps the deliveries in arrival order, whatever order they finish in', () => {
    const held = new HeldDeliveries();
    const [a, b, c, d] = [1, 2, 3, 4].map(deliveryOf);
    for (const delivery of [a, b, c, d]) held.add(delivery);
    held.delete(c);
    expect(tags(held)).toEqual([1, 2, 4]);
    held.delete(a);
    held.delete(d);
    expect(tags(held)).toEqual([2]);
    held.delete(b);
    expect(tags(held)).toEqual([]);
    held.add(c);
    expect(tags(held)).toEqual([3]);
  });

  it('ignores a second add or delete of the same delivery', () => {
    const held = new HeldDeliveries();
    const [a, b] = [1, 2].map(deliveryOf);
    held.add(a);
    held.add(a);
    held.add(b);
    held.delete(a);
    held.delete(a);
    expect(tags(held)).toEqual([2]);
  });

  it('walks the deliveries held when the walk began, whatever the walk deletes', () => {
    const held = new HeldDeliveries();
    const all = [1, 2, 3].map(deliveryOf);
    for (const delivery of all) held.add(delivery);
    const seen: number[] = [];
    for (const delivery of held) {
      seen.push(delivery.message.fields.deliveryTag);
      held.delete(delivery);
    }
    expect(seen).toEqual([1, 2, 3]);
    expect(tags(held)).toEqual([]);
  });
});
