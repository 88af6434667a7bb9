import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { NonRetryableError } from 'nestjs-amqp-retry';
import { RetryRmqContext, RetryRpcExceptionFilter, RetryServer, type RetryServerOptions } from 'nestjs-amqp-retry/transport';
import { AMQP_URL } from '../support/broker.js';

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
}

function act(calls: TransportCall[], pattern: string, order: Order, ctx: RetryRmqContext): void {
  const retry = ctx.getRetryContext();
  calls.push({ pattern: ctx.getPattern(), data: order, attempt: retry.attempt, maxAttempts: retry.maxAttempts, at: Date.now() });
  if (order.nonRetryable === 'wrapped') throw new RpcException(new NonRetryableError(`order ${order.id} is invalid`));
  if (order.nonRetryable === 'plain') throw new NonRetryableError(`order ${order.id} is invalid`);
  if (retry.attempt <= (order.failures ?? 0)) throw new Error(`${pattern} failure ${retry.attempt} of order ${order.id}`);
}

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
