import type { INestMicroservice } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import { RetryClient } from 'nestjs-amqp-retry/transport';
import { storeKeyOf } from '../../libs/amqp-retry/src/idempotency/handled-once.invoker.js';
import { redisKind, uniqueSpace } from '../support/stores.js';
import { AMQP_URL, TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { tierQueues } from '../../libs/amqp-retry/src/core/retry-topology.plan.js';
import { OrdersController, startRetryMicroservice } from './transport-app.js';

describe('the transport with an idempotency store', () => {
  let broker: TestBroker;
  let app: INestMicroservice | undefined;
  const queue = uniqueName('e2e.transport.once');
  const space = uniqueSpace();

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await app?.close();
    await redisKind.cleanUp(space);
    // The tiers of order.created's own schedule (200 ms), which the plan record does not name.
    await broker.deleteRetryTopology(queue, { queues: tierQueues({ queue, delaysMs: [200] }) });
    await broker.close();
  });

  it('handles an event once when the same message id comes twice, and still retries a failure through its pattern policy', async () => {
    app = await startRetryMicroservice({ queue, idempotency: { store: redisKind.create(space) } });
    const client = new RetryClient({ url: AMQP_URL, queue, delayedDelivery: false });
    try {
      for (let i = 0; i < 2; i++) await lastValueFrom(client.emit('order.paid', { id: 1 }, { messageId: 'same-id' }), { defaultValue: undefined });
      await lastValueFrom(client.emit('order.created', { id: 2, failures: 1 }, { messageId: 'failing-once' }), { defaultValue: undefined });
    } finally {
      await client.close();
    }
    const calls = app.get(OrdersController).calls;
    await waitFor(() => calls.filter((c) => c.pattern === 'order.created').length === 2, 'the retry of order.created');
    await waitFor(async () => (await broker.count(queue)) === 0, 'the queue empty');
    expect(calls.filter((c) => c.pattern === 'order.paid').map((c) => c.data)).toEqual([{ id: 1 }]);
    expect(calls.filter((c) => c.pattern === 'order.created').map((c) => c.attempt)).toEqual([1, 2]);
    expect(await redisKind.holds(space, storeKeyOf(queue, 'same-id'))).toBe(true);
  });
});
