import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { RetryRmqContext, RetryServer } from 'nestjs-amqp-retry/transport';
import { tierQueues } from '../../libs/amqp-retry/src/core/retry-topology.plan.js';
import { AMQP_URL, TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { OrdersController, startRetryMicroservice } from './transport-app.js';

/** The tier queues of the patterns of OrdersController that have schedules of their own (the plan record names only the queue's). */
const patternTiers = (queue: string) => [...tierQueues({ queue, delaysMs: [200] }), ...tierQueues({ queue, delaysMs: [100, 400] })];

@Controller()
class FirstOfTwoController {
  readonly attempts: number[] = [];

  @EventPattern<string>('twice')
  first(@Payload() _data: unknown, @Ctx() ctx: RetryRmqContext): void {
    this.attempts.push(ctx.getRetryContext().attempt);
  }
}

@Controller()
class SecondOfTwoController {
  @EventPattern<string>('twice', { retry: { delays: [100], maxAttempts: 5 } })
  second(): void {
    throw new Error('always fails');
  }
}

/** Two handlers of one pattern (Nest chains them): only the second gives the pattern a retry policy. */
@Module({ controllers: [FirstOfTwoController, SecondOfTwoController] })
class TwoHandlersModule {}

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

  it('takes the retry policy of a pattern from whichever of its chained handlers gives it', async () => {
    const server = new RetryServer({ url: AMQP_URL, queue, delays: [300], maxAttempts: 2, delayedDelivery: false });
    app = await NestFactory.createMicroservice(TwoHandlersModule, { strategy: server, logger: ['error'] });
    await app.listen();
    await broker.publish('', queue, { pattern: 'twice', data: { id: 1 } });
    const [parked] = await broker.take(`${queue}.error`, 1, 15_000);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 5 });
    expect(app.get(FirstOfTwoController).attempts).toEqual([1, 2, 3, 4, 5]);
  });
});
