// The @nestjs/microservices transport: a microservice on RetryServer handles events (@EventPattern, retried by the
// broker, then parked) and requests (@MessagePattern, answered once); another app sends to it through a RetryClient
// registered with ClientsModule, typed as RetryClient so that emit() takes { delay }.
//   node dist/transport/main.js                   the microservice on queue "orders", and one order sent to it
//   EXAMPLE_SMOKE=1 node dist/transport/main.js   sends an event, a request and a delayed event, checks, exits
import 'reflect-metadata';
import { Controller, Inject, Injectable, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientsModule, Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { planDelayTopology } from 'nestjs-amqp-retry';
import { RetryClient, RetryRmqContext, RetryRpcExceptionFilter, RetryServer } from 'nestjs-amqp-retry/transport';
import { AMQP_URL, SMOKE, deleteHandlerTopology, expectEqual, smokeRun, suffix, waitFor } from '../shared/smoke';

interface Order {
  id: number;
}

const QUEUE = `orders${suffix}`;
const POLICY = { delays: ['250ms'], maxAttempts: 3 }; // 3 calls in all, 250 ms apart
// A smoke run's delayed messages go through a delay ladder of its own, deleted afterwards. Your apps leave out
// `delayedDelivery` and share the vhost's ladder (docs/delays.md).
const DELAY_PREFIX = `orders.delay${suffix}`;
const LADDER = SMOKE ? { delayedDelivery: { prefix: DELAY_PREFIX } } : {};

const seen = { created: [] as number[], reminded: [] as { id: number; at: number }[] };

// ---- the service: a microservice whose transport is RetryServer ----
@Controller()
export class OrdersController {
  private readonly logger = new Logger('Orders');

  @EventPattern<string>('order.created')
  onCreated(@Payload() order: Order, @Ctx() ctx: RetryRmqContext): void {
    const { attempt } = ctx.getRetryContext();
    seen.created.push(attempt);
    if (attempt === 1) throw new Error('stock service timed out'); // retried after 250 ms
    this.logger.log(`order ${order.id} reserved on attempt ${attempt}`);
  }

  @EventPattern<string>('order.remind')
  onRemind(@Payload() order: Order): void {
    seen.reminded.push({ id: order.id, at: Date.now() });
  }

  @MessagePattern('order.get') // a request: answered once, never retried (its caller is waiting)
  get(@Payload() query: { id: number }): { id: number; status: string } {
    return { id: query.id, status: 'paid' };
  }
}

@Module({ controllers: [OrdersController] })
export class OrdersServiceModule {}

// ---- a caller: any Nest app, with the client registered the Nest way ----
@Injectable()
export class Checkout {
  constructor(@Inject('ORDERS') private readonly orders: RetryClient) {} // RetryClient, not ClientProxy: emit() takes { delay }

  async place(id: number): Promise<unknown> {
    await lastValueFrom(this.orders.emit('order.created', { id })); // completes once the broker confirmed it
    await lastValueFrom(this.orders.emit('order.remind', { id }, { delay: '300ms' })); // delivered no earlier than 300 ms
    return lastValueFrom(this.orders.send('order.get', { id })); // request-response
  }
}

@Module({
  imports: [ClientsModule.register([{ name: 'ORDERS', customClass: RetryClient, options: { url: AMQP_URL, queue: QUEUE, ...LADDER } }])],
  providers: [Checkout],
})
export class CheckoutModule {}

async function start() {
  const service = await NestFactory.createMicroservice(OrdersServiceModule, {
    strategy: new RetryServer({ url: AMQP_URL, queue: QUEUE, ...POLICY, delayedDelivery: false }), // + any RetryModule option
    logger: SMOKE ? ['error'] : undefined,
  });
  service.useGlobalFilters(new RetryRpcExceptionFilter()); // the parked copy keeps the error thrown, not "Internal server error"
  await service.listen();
  const caller = await NestFactory.createApplicationContext(CheckoutModule, { logger: SMOKE ? ['error'] : undefined });
  return { service, caller };
}

async function smoke(): Promise<void> {
  const { service, caller } = await start();
  try {
    const sentAt = Date.now();
    const reply = await caller.get(Checkout).place(7);
    expectEqual(reply, { id: 7, status: 'paid' }, 'the reply');
    await waitFor(() => seen.created.length === 2 && seen.reminded.length === 1, 'the event handled on attempt 2 and the reminder');
    expectEqual(seen.created, [1, 2], 'the attempts of order.created');
    const reminder = seen.reminded[0];
    expectEqual({ id: reminder.id, late: reminder.at - sentAt >= 300 - 5 }, { id: 7, late: true }, 'the delayed reminder');
  } finally {
    await caller.close();
    await service.close();
  }
}

async function main(): Promise<void> {
  if (SMOKE) {
    return smokeRun('transport', smoke, async (channel) => {
      await deleteHandlerTopology(channel, QUEUE, POLICY);
      const ladder = planDelayTopology(DELAY_PREFIX);
      for (const { name } of ladder.queues) await channel.deleteQueue(name);
      for (const { name } of ladder.exchanges) await channel.deleteExchange(name);
    });
  }
  const { service, caller } = await start();
  service.enableShutdownHooks();
  caller.enableShutdownHooks();
  new Logger('Checkout').log(`order 7: ${JSON.stringify(await caller.get(Checkout).place(7))}`);
}

void main();
