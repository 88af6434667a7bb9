// RetryModule.forRootAsync with @nestjs/config: the module's options come from ConfigService (the environment and a
// .env file, with defaults in code), injected into the factory. Options left out of the factory are still read
// from the library's own environment variables (RETRY_PREFETCH, ...: docs/configuration.md).
//   AMQP_URL=amqp://... ORDERS_RETRY_DELAYS=1s,10s ORDERS_MAX_ATTEMPTS=3 node dist/config-async/main.js
//   EXAMPLE_SMOKE=1 node dist/config-async/main.js   a handled and a parked order, checked against the configuration
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { ParkedMessages, RetryModule, RetryPublisher, RetryWithBackoff, type RetryContext } from 'nestjs-amqp-retry';
import { SMOKE, deleteHandlerTopology, expectEqual, smokeRun, suffix, waitFor } from '../shared/smoke';

const EXCHANGE = `orders${suffix}`;
const QUEUE = `orders.created${suffix}`;

const seen = { handled: [] as number[], attempts: [] as string[] };

@Injectable()
export class OrdersHandler {
  // No delays or maxAttempts here: the handler takes the module's, from the configuration.
  @RetryWithBackoff({ queue: QUEUE, exchange: EXCHANGE, routingKey: 'order.created' })
  async handle(order: { id: number }, ctx: RetryContext): Promise<void> {
    seen.attempts.push(`${order.id}#${ctx.attempt}/${ctx.maxAttempts}`);
    if (order.id < 0) throw new Error(`order ${order.id} is invalid`); // parked after the configured attempts
    seen.handled.push(order.id);
  }
}

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true }), // reads .env, if there is one, into the environment
    RetryModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        url: config.get<string>('AMQP_URL', 'amqp://guest:guest@127.0.0.1:5672'),
        delays: config.get<string>('ORDERS_RETRY_DELAYS', '1s,10s,1m').split(','),
        maxAttempts: Number(config.get<string>('ORDERS_MAX_ATTEMPTS', '4')),
        application: config.get<string>('APP_NAME', 'orders-service'),
        delayedDelivery: false, // this app delays nothing: no delay ladder
      }),
    }),
  ],
  providers: [OrdersHandler],
})
export class AppModule {}

async function smoke(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
  try {
    const publisher = app.get(RetryPublisher);
    const parked = app.get(ParkedMessages);
    await publisher.publish(EXCHANGE, 'order.created', { id: 1 });
    await publisher.publish(EXCHANGE, 'order.created', { id: -2 });
    await waitFor(async () => seen.handled.length === 1 && (await parked.summary({ queue: QUEUE })).total === 1, 'order 1 handled, order -2 parked');
    expectEqual(seen.attempts.sort(), ['-2#1/2', '-2#2/2', '1#1/2'], 'the handler calls (maxAttempts from ORDERS_MAX_ATTEMPTS)');
    const { items } = await parked.list({ queue: QUEUE }, { offset: 0, limit: 10 });
    expectEqual(
      items.map(({ reason, error, attempts }) => ({ reason, error, attempts })),
      [{ reason: 'exhausted', error: 'order -2 is invalid', attempts: 2 }],
      'the parked message',
    );
  } finally {
    await app.close();
  }
}

async function main(): Promise<void> {
  if (SMOKE) {
    process.env.ORDERS_RETRY_DELAYS = '200ms'; // the configuration the smoke run checks against
    process.env.ORDERS_MAX_ATTEMPTS = '2';
    const policy = { delays: ['200ms'], maxAttempts: 2 };
    return smokeRun('config-async', smoke, (channel) => deleteHandlerTopology(channel, QUEUE, { ...policy, exchange: EXCHANGE }));
  }
  const app = await NestFactory.createApplicationContext(AppModule);
  app.enableShutdownHooks();
  await app.get(RetryPublisher).publish(EXCHANGE, 'order.created', { id: 1 });
}

void main();
