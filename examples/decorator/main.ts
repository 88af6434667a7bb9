// @RetryWithBackoff on a provider's method: a message whose handler throws is retried by the broker after each delay,
// then parked with its error when its attempts run out; ParkedMessages lists the parked ones and replays them.
//   node dist/decorator/main.js                   the app: publishes orders 1 and 2, consumes "shop.orders" until Ctrl-C;
//                                                 order 2 is parked: `npx --no-install amqp-retry parked replay --app shop
//                                                 --queue shop.orders --all` sends it back (ships with WAREHOUSE=open)
//   EXAMPLE_SMOKE=1 node dist/decorator/main.js   publishes two orders, waits, replays the parked one, checks, exits
import 'reflect-metadata';
import { Injectable, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ParkedMessages, RetryModule, RetryPublisher, RetryWithBackoff, type RetryContext } from 'nestjs-amqp-retry';
import { AMQP_URL, SMOKE, deleteHandlerTopology, expectEqual, smokeRun, suffix, waitFor } from '../shared/smoke';

interface Order {
  id: number;
}

// A smoke run's names end in a random suffix; yours are plain names.
const EXCHANGE = `shop${suffix}`;
const QUEUE = `shop.orders${suffix}`;
const POLICY = { delays: ['250ms', '500ms'], maxAttempts: 3 }; // 3 calls in all: retried after 250 ms, then 500 ms

/** What the handler did, for the smoke run to check. */
const seen = { attempts: [] as string[], shipped: [] as number[] };
const warehouse = { open: process.env.WAREHOUSE === 'open' }; // closed unless WAREHOUSE=open

@Injectable()
export class OrdersHandler {
  private readonly logger = new Logger('Orders');

  @RetryWithBackoff({ queue: QUEUE, exchange: EXCHANGE, routingKey: 'order.created', ...POLICY })
  async handle(order: Order, ctx: RetryContext): Promise<void> {
    seen.attempts.push(`${order.id}#${ctx.attempt}`);
    if (order.id === 1 && ctx.attempt === 1) throw new Error('payment service busy'); // retried, then shipped
    if (order.id === 2 && !warehouse.open) throw new Error('warehouse closed'); // parked after 3 attempts
    this.logger.log(`order ${order.id}: shipped on attempt ${ctx.attempt}`);
    seen.shipped.push(order.id);
  }
}

@Module({
  // RetryModule is global: RetryPublisher and ParkedMessages can be injected anywhere. This app delays nothing, so it
  // declares no delay ladder (delayedDelivery: false); the other options come from the environment (docs/configuration.md).
  imports: [RetryModule.forRoot({ url: AMQP_URL, application: 'shop', delayedDelivery: false })],
  providers: [OrdersHandler],
})
export class AppModule {}

async function smoke(): Promise<void> {
  warehouse.open = false; // order 2 is parked first, whatever WAREHOUSE says
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
  try {
    const publisher = app.get(RetryPublisher);
    const parked = app.get(ParkedMessages); // this application's parking queues
    await publisher.publish(EXCHANGE, 'order.created', { id: 1 }); // resolves once the broker confirmed it
    await publisher.publish(EXCHANGE, 'order.created', { id: 2 });
    await waitFor(async () => seen.shipped.includes(1) && (await parked.summary({ queue: QUEUE })).total === 1, 'order 1 shipped, order 2 parked');

    const { items } = await parked.list({ queue: QUEUE }, { offset: 0, limit: 10 });
    expectEqual(
      items.map((item) => ({ body: item.body, reason: item.reason, error: item.error, attempts: item.attempts })),
      [{ body: '{"id":2}', reason: 'exhausted', error: 'warehouse closed', attempts: 3 }],
      'the parked message',
    );

    warehouse.open = true; // fixed: send the parked order back to its queue, with fresh attempts
    const replay = await parked.replay({ errorQueue: `${QUEUE}.error`, filter: {} });
    expectEqual({ matched: replay.matched, replayed: replay.replayed }, { matched: 1, replayed: 1 }, 'the replay');
    await waitFor(() => seen.shipped.includes(2), 'the replayed order 2 shipped');
    expectEqual(seen.attempts.sort(), ['1#1', '1#2', '2#1', '2#1', '2#2', '2#3'], 'the handler calls');
    expectEqual((await parked.summary({ queue: QUEUE })).total, 0, 'messages left parked');
  } finally {
    await app.close(); // stops consuming, lets handlers in flight finish, closes the connections
  }
}

async function main(): Promise<void> {
  if (SMOKE) return smokeRun('decorator', smoke, (channel) => deleteHandlerTopology(channel, QUEUE, { ...POLICY, exchange: EXCHANGE }));
  const app = await NestFactory.createApplicationContext(AppModule);
  app.enableShutdownHooks(); // Ctrl-C: stop consuming, let handlers finish, close
  const publisher = app.get(RetryPublisher);
  for (const id of [1, 2]) await publisher.publish(EXCHANGE, 'order.created', { id });
}

void main();
