import type { INestMicroservice } from '@nestjs/common';
import { tierQueues } from '../../libs/amqp-retry/src/core/retry-topology.plan.js';
import { TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { OrdersController, startRetryMicroservice } from './transport-app.js';

/** The tier queues of the patterns of OrdersController that have schedules of their own (the plan record names only the queue's). */
const patternTiers = (queue: string) => [...tierQueues({ queue, delaysMs: [200] }), ...tierQueues({ queue, delaysMs: [100, 400] })];

describe('the transport, reviewed', () => {
  let broker: TestBroker;
  let queue: string;
  let app: INestMicroservice | undefined;
  const exchanges: string[] = [];

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await broker.close();
  });
  beforeEach(() => {
    queue = uniqueName('e2e.transport.review');
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    const extraTiers = [...patternTiers(queue), ...tierQueues({ queue, delaysMs: [100] })];
    await broker.deleteRetryTopology(queue, { queues: extraTiers, exchanges: exchanges.splice(0) });
  });

  const calls = (pattern: string) => app!.get(OrdersController).calls.filter((c) => c.pattern === pattern);

  it('routes a body without the envelope by the key it was published with on every attempt, not by the tier that sent it back', async () => {
    const exchange = uniqueName('e2e.transport.review.x');
    exchanges.push(exchange);
    app = await startRetryMicroservice({ queue, exchange }, { passErrorsThrough: true });
    // order.paid retries on the queue's schedule (a nack), order.created on its own (the first failure is moved)
    await broker.publish(exchange, 'order.paid', { id: 1, failures: 1 });
    await broker.publish(exchange, 'order.created', { id: 2, failures: 1 });
    await waitFor(() => calls('order.paid').length === 2 && calls('order.created').length === 2, 'both retried once', 15_000);
    expect(calls('order.paid').map((c) => c.attempt)).toEqual([1, 2]);
    expect(calls('order.created').map((c) => c.attempt)).toEqual([1, 2]);
    expect(await broker.count(`${queue}.error`)).toBe(0);
  });
});
