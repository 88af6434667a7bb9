import type { MessageProperties } from 'amqplib';
import { lastValueFrom, Observable } from 'rxjs';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { NonRetryableError, retryTopologyNames } from 'nestjs-amqp-retry';
import { RetryClient, RetryRmqContext, RetryRpcExceptionFilter, RetryServer, type RetryServerOptions } from 'nestjs-amqp-retry/transport';
import { AMQP_URL, type TestBroker, waitFor } from '../support/broker.js';

/** What a test sends: fail the first `failures` attempts, or fail in a way that must park at once. */
export interface Order {
  id: number;
  failures?: number;
  nonRetryable?: 'plain' | 'wrapped';
}

export interface TransportCall {
  pattern: string;
  data: unknown;
  attempt: number;
  maxAttempts: number;
  at: number;
  properties: MessageProperties;
}

function act(calls: TransportCall[], pattern: string, order: Order, ctx: RetryRmqContext): void {
  const retry = ctx.getRetryContext();
  calls.push({
    pattern: ctx.getPattern(),
    data: order,
    attempt: retry.attempt,
    maxAttempts: retry.maxAttempts,
    at: Date.now(),
    properties: ctx.getMessage().properties,
  });
  if (order.nonRetryable === 'wrapped') throw new RpcException(new NonRetryableError(`order ${order.id} is invalid`));
  if (order.nonRetryable === 'plain') throw new NonRetryableError(`order ${order.id} is invalid`);
  if (retry.attempt <= (order.failures ?? 0)) throw new Error(`${pattern} failure ${retry.attempt} of order ${order.id}`);
}

/**
 * The tier queues of OrdersController's patterns that have schedules of their own: the queue's plan record names only
 * the queue's schedule, so deleteRetryTopology must be told of these.
 */
export const patternTiers = (queue: string): string[] => [
  ...retryTopologyNames(queue, { delays: [200] }).tiers,
  ...retryTopologyNames(queue, { delays: [100, 400] }).tiers,
];

/** Event handlers with their own policies and one with the server's, and request handlers. */
@Controller()
export class OrdersController {
  readonly calls: TransportCall[] = [];

  @EventPattern<string>('order.created', { retry: { delays: [200], maxAttempts: 3 } })
  created(@Payload() order: Order, @Ctx() ctx: RetryRmqContext): void {
    act(this.calls, 'order.created', order, ctx);
  }

  @EventPattern<string>('order.paid')
  paid(@Payload() order: Order, @Ctx() ctx: RetryRmqContext): void {
    act(this.calls, 'order.paid', order, ctx);
  }

  @EventPattern<string>('order.shipped', { retry: { delays: [100, 400], maxAttempts: 4 } })
  async shipped(@Payload() order: Order, @Ctx() ctx: RetryRmqContext): Promise<void> {
    act(this.calls, 'order.shipped', order, ctx);
  }

  readonly started: number[] = [];
  readonly finished: number[] = [];

  @EventPattern<string>('order.slow')
  async slow(@Payload() order: { id: number; ms: number }): Promise<void> {
    this.started.push(order.id);
    await new Promise((resolve) => setTimeout(resolve, order.ms));
    this.finished.push(order.id);
  }

  /** A request handler that never answers. */
  @MessagePattern('order.never')
  never(): Observable<never> {
    return new Observable<never>(() => undefined);
  }

  @MessagePattern('order.get')
  get(@Payload() query: { id: number }): { id: number; status: string } {
    if (query.id < 0) throw new RpcException(`no order ${query.id}`);
    return { id: query.id, status: 'paid' };
  }

  @MessagePattern({ cmd: 'sum' })
  sum(@Payload() numbers: number[]): number {
    return numbers.reduce((a, b) => a + b, 0);
  }
}

@Module({ controllers: [OrdersController] })
export class OrdersModule {}

/** A microservice on RetryServer: the queue's own policy is 2 attempts, 300 ms apart. */
export async function startRetryMicroservice(
  options: Partial<RetryServerOptions> & { queue: string },
  { passErrorsThrough = false } = {},
): Promise<INestMicroservice> {
  const server = new RetryServer({ url: AMQP_URL, delays: [300], maxAttempts: 2, delayedDelivery: false, ...options });
  const app = await NestFactory.createMicroservice(OrdersModule, { strategy: server, logger: ['error'] });
  if (passErrorsThrough) app.useGlobalFilters(new RetryRpcExceptionFilter());
  await app.listen();
  return app;
}

/**
 * The once-only scenario of the idempotency and inbox tests: 'order.paid' sent twice with one message id, and
 * 'order.created' failing its first attempt (its pattern retries it through a 200 ms tier). Resolves once the retry
 * ran and the queue is empty; then `order.paid` must have run once and `order.created` twice (attempts 1 and 2).
 */
export async function sendTwiceAndFailOnce(app: INestMicroservice, broker: TestBroker, queue: string): Promise<TransportCall[]> {
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
  return calls;
}
