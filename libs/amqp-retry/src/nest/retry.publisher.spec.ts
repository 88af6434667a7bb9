import type { RetryEngine } from '../engine/retry.engine.js';
import { RetryPublisher } from './retry.publisher.js';

describe('RetryPublisher.publish', () => {
  const publishes: unknown[] = [];
  const engine = { publish: (...args: unknown[]) => (publishes.push(args), Promise.resolve()), hasQueuesThatRefuse: false } as unknown as RetryEngine;

  it('refuses null options with a TypeError naming the fix, publishing nothing', async () => {
    const publisher = new RetryPublisher(engine);
    await expect(publisher.publish('orders', 'order.created', { id: 1 }, null as never)).rejects.toThrow(
      new TypeError("RetryPublisher.publish: the options are null; give an object of publish options, e.g. { delay: '30s' }, or leave them out"),
    );
    expect(publishes).toEqual([]);
    await expect(publisher.publish('orders', 'order.created', { id: 1 })).resolves.toMatchObject({ exchange: 'orders', delayMs: 0 });
  });
});
