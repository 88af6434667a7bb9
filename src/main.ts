import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { OrderProgress } from './orders/order.progress.js';

/** The parked-messages page is open (no guard): listen on the loopback address only, never on a public one. */
const HOST = '127.0.0.1';

async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['log', 'warn', 'error', 'debug'] });
  app.enableShutdownHooks(); // SIGTERM/SIGINT: stop consuming, finish handlers in flight, close
  const port = Number(process.env.EXAMPLE_PORT ?? 3000);
  await app.listen(port, HOST);
  Logger.log(`orders example running; parked messages at http://${HOST}:${port}/retry (open: local use only); Ctrl-C to stop`, 'Example');
  if (process.env.EXAMPLE_EXIT_WHEN_DONE === '1') {
    await app.get(OrderProgress).done;
    await app.close();
  }
}

main().catch((error: unknown) => {
  Logger.error(error instanceof Error ? error.message : String(error), 'Example');
  process.exitCode = 1;
});
