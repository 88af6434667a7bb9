// One instance of the console test's application, run as a child process so that the test can SIGKILL it: a Nest
// HTTP application with two handlers and the retry console (open, beating every 500 ms). Plain ESM JavaScript on this
// worktree's built library (libs/amqp-retry/dist), decorators applied by hand. Configuration from the environment.
import 'reflect-metadata';
import { Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NonRetryableError, RetryDashboardModule, RetryModule, RetryPublisher, RetryWithBackoff } from '../../libs/amqp-retry/dist/esm/index.js';

const { CONSOLE_URL, CONSOLE_APP, CONSOLE_QUEUE, CONSOLE_OUTAGE_QUEUE, CONSOLE_RESULTS } = process.env;

/** Handles orders: a poison one is refused for good (parked at once); once replayed, it is recorded as handled. */
class OrdersHandler {
  constructor(publisher) {
    this.publisher = publisher;
  }

  async handle(message, ctx) {
    await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
    if (!message.poison) return;
    if (ctx.message.properties.headers?.['x-replayed-at'] === undefined) {
      throw new NonRetryableError(`order ${message.id} refused by payments at 10.0.0.${message.id % 7}:443`);
    }
    await this.publisher.publish('', CONSOLE_RESULTS, { id: message.id, pid: process.pid });
  }
}
Inject(RetryPublisher)(OrdersHandler, undefined, 0);
Injectable()(OrdersHandler);
RetryWithBackoff({ queue: CONSOLE_QUEUE, delays: ['100ms'], maxAttempts: 2 })(
  OrdersHandler.prototype,
  'handle',
  Object.getOwnPropertyDescriptor(OrdersHandler.prototype, 'handle'),
);

/** Calls a payments API that is down: every call fails, and the circuit breaker opens. */
class PaymentsHandler {
  async handle() {
    throw new Error('connect ECONNREFUSED 10.0.0.7:443');
  }
}
Injectable()(PaymentsHandler);
RetryWithBackoff({ queue: CONSOLE_OUTAGE_QUEUE, delays: ['100ms', '200ms'], maxAttempts: 3, circuitBreaker: { consecutiveFailures: 3, openFor: '2m' } })(
  PaymentsHandler.prototype,
  'handle',
  Object.getOwnPropertyDescriptor(PaymentsHandler.prototype, 'handle'),
);

class ConsoleModule {}
Module({
  imports: [
    RetryModule.forRoot({ url: CONSOLE_URL, application: CONSOLE_APP, delayedDelivery: false, shutdownTimeout: '2s' }),
    RetryDashboardModule.forRoot({ path: '/retry', allowUnauthenticated: true, heartbeatIntervalMs: 500 }),
  ],
  providers: [OrdersHandler, PaymentsHandler],
})(ConsoleModule);

const app = await NestFactory.create(ConsoleModule, { logger: process.env.CHAOS_VERBOSE ? ['error', 'warn', 'log'] : false });
app.enableShutdownHooks();
await app.listen(0, '127.0.0.1');
process.send?.({ port: app.getHttpServer().address().port });
