import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RetryEngine } from 'nestjs-amqp-retry';
import { RetryServer } from 'nestjs-amqp-retry/transport';
import { AppModule } from './app.module.js';
import { OrderProgress } from './orders/order.progress.js';
import { OrderSeeder } from './orders/order.seeder.js';
import { SHIPPING_QUEUE } from './shipping/shipment.js';

/** The parked-messages page is open (no guard): listen on the loopback address only, never on a public one. */
const HOST = '127.0.0.1';

async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['log', 'warn', 'error', 'debug'] });
  app.enableShutdownHooks(); // SIGTERM/SIGINT: stop consuming, finish handlers in flight, close
  // A hybrid app: the shipping part is a microservice on the transport, sharing RetryModule's connections.
  app.connectMicroservice({ strategy: new RetryServer({ queue: SHIPPING_QUEUE, delays: ['1s'], engine: app.get(RetryEngine) }) });
  await app.startAllMicroservices();
  const port = Number(process.env.PORT ?? process.env.EXAMPLE_PORT ?? 3000);
  await app.listen(port, HOST);
  const base = `http://${HOST}:${port}`;
  Logger.log(
    `orders example running: ${base}/health, ${base}/metrics, parked messages at ${base}/retry (open: local use only); Ctrl-C to stop`,
    'Example',
  );
  await app.get(OrderSeeder).seed(); // once every consumer runs: the log reads in the order things happen
  if (process.env.EXAMPLE_EXIT_WHEN_DONE === '1') {
    await app.get(OrderProgress).done;
    await app.close();
  }
}

main().catch((error: unknown) => {
  Logger.error(error instanceof Error ? error.message : String(error), 'Example');
  process.exitCode = 1;
});
