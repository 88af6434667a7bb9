import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { OrderProgress } from './orders/order.progress.js';

async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['log', 'warn', 'error', 'debug'] });
  app.enableShutdownHooks(); // SIGTERM/SIGINT: stop consuming, finish handlers in flight, close
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  Logger.log(`orders example running: GET http://localhost:${port}/health and /metrics; Ctrl-C to stop`, 'Example');
  if (process.env.EXAMPLE_EXIT_WHEN_DONE === '1') {
    await app.get(OrderProgress).done;
    await app.close();
  }
}

main().catch((error: unknown) => {
  Logger.error(error instanceof Error ? error.message : String(error), 'Example');
  process.exitCode = 1;
});
