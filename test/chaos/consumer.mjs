// The consuming process of the chaos test: a Nest application with one @RetryWithBackoff handler, run as a child
// process so that the test can SIGKILL it. Plain ESM JavaScript on the built library (no TypeScript at run time),
// so decorators are applied by hand. Configuration comes from the environment the test sets.
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RedisIdempotencyStore, RetryModule, RetryPublisher, RetryWithBackoff } from 'nestjs-amqp-retry';

const {
  CHAOS_URL,
  CHAOS_QUEUE,
  CHAOS_RESULTS,
  CHAOS_STARTED,
  CHAOS_CONNECTION,
  CHAOS_FAILURE_RATE = '0.3',
  CHAOS_WORK_MS = '2',
  CHAOS_QUEUE_TYPE = 'classic',
  CHAOS_REDIS_URL,
  CHAOS_REDIS_PREFIX,
} = process.env;
const MAX_ATTEMPTS = 5;
const failureRate = Number(CHAOS_FAILURE_RATE);

class ChaosHandler {
  constructor(publisher) {
    this.publisher = publisher;
  }

  /** Fails transiently on ~30% of attempts (never the last), always for ids marked mustFail. */
  async handle(message, ctx) {
    if (CHAOS_STARTED) await this.publisher.publish('', CHAOS_STARTED, { id: message.id });
    await new Promise((resolve) => setTimeout(resolve, Number(CHAOS_WORK_MS)));
    if (message.mustFail) throw new Error(`id ${message.id} always fails`);
    if (!ctx.isLastAttempt && Math.random() < failureRate) throw new Error(`id ${message.id} failed transiently`);
    // The record is confirmed before the handler returns, so before the ack: a kill in between makes a duplicate,
    // never a loss. `call` tells a second call of the handler from the publisher sending the same result again.
    await this.publisher.publish('', CHAOS_RESULTS, { id: message.id, attempt: ctx.attempt, pid: process.pid, call: randomUUID() });
  }
}
Inject(RetryPublisher)(ChaosHandler, undefined, 0);
Injectable()(ChaosHandler);
const handle = Object.getOwnPropertyDescriptor(ChaosHandler.prototype, 'handle');
RetryWithBackoff({ queue: CHAOS_QUEUE, delays: ['50ms', '100ms'], maxAttempts: MAX_ATTEMPTS, prefetch: 20, queueType: CHAOS_QUEUE_TYPE })(
  ChaosHandler.prototype,
  'handle',
  handle,
);

class ChaosModule {}
Module({
  imports: [
    RetryModule.forRoot({
      url: CHAOS_URL,
      connectionName: CHAOS_CONNECTION,
      reconnect: { initialDelay: '100ms', maxDelay: '2s' },
      publishTimeout: '60s',
      // With CHAOS_REDIS_URL, each message is handled once: claims of 3 s so that a SIGKILLed consumer's claims free
      // soon (its redelivered copies wait for them).
      ...(CHAOS_REDIS_URL
        ? { idempotency: { store: new RedisIdempotencyStore({ url: CHAOS_REDIS_URL, keyPrefix: CHAOS_REDIS_PREFIX }), claimTtl: '3s' } }
        : {}),
    }),
  ],
  providers: [ChaosHandler],
})(ChaosModule);

const app = await NestFactory.createApplicationContext(ChaosModule, { logger: ['error', 'warn', 'log'] });
app.enableShutdownHooks();
await app.init();
process.send?.('ready');
