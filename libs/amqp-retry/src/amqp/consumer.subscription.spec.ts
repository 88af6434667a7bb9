import type { Channel, ConsumeMessage } from 'amqplib';
import type { AckBatcher } from './ack.batcher.js';
import { abortSubscription, Delivery, HeldDeliveries, Subscription } from './consumer.subscription.js';

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

describe('abortSubscription', () => {
  it('aborts the signal and detaches the gate pass of each held delivery that runs, once', () => {
    const subscription = new Subscription({} as Channel, false, () => undefined);
    const detached: number[] = [];
    const [running, waiting, other] = [1, 2, 3].map(deliveryOf);
    for (const delivery of [running, waiting, other]) subscription.held.add(delivery);
    running.pass = { leave: () => undefined, detach: () => void detached.push(1), stepAside: () => undefined, rejoin: () => undefined };
    other.pass = { leave: () => undefined, detach: () => void detached.push(3), stepAside: () => undefined, rejoin: () => undefined };
    abortSubscription(subscription, 'the channel closed');
    abortSubscription(subscription, 'again');
    expect(subscription.abort.signal.aborted).toBe(true);
    expect((subscription.abort.signal.reason as Error).message).toBe('the channel closed');
    expect(detached).toEqual([1, 3]);
  });
});
