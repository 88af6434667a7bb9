// The consuming process of the outbox chaos test: one @RetryWithBackoff handler with the transactional inbox, which
// applies each order to the effects table in the transaction the inbox hands it. Fails transiently after its write
// now and then (the write must roll back). Plain ESM on the built library; decorators applied by hand.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { RetryModule, RetryWithBackoff, pgOutboxAdapter } from 'nestjs-amqp-retry';

const { CHAOS_URL, CHAOS_QUEUE, CHAOS_CONNECTION, CHAOS_QUEUE_TYPE, CHAOS_POSTGRES_URL, CHAOS_EFFECTS, CHAOS_INBOX } = process.env;
const pool = new pg.Pool({ connectionString: CHAOS_POSTGRES_URL, max: 12 });
pool.on('error', () => undefined);

class ApplyHandler {
  async apply(order, ctx) {
    await ctx.transaction.query(`INSERT INTO "${CHAOS_EFFECTS}" (order_id, pid) VALUES ($1, $2)`, [order.id, process.pid]);
    await new Promise((resolve) => setTimeout(resolve, 1));
    if (!ctx.isLastAttempt && Math.random() < 0.05) throw new Error(`order ${order.id} failed transiently after its write`);
  }
}
Injectable()(ApplyHandler);
const apply = Object.getOwnPropertyDescriptor(ApplyHandler.prototype, 'apply');
RetryWithBackoff({
  queue: CHAOS_QUEUE,
  queueType: CHAOS_QUEUE_TYPE,
  delays: ['50ms', '100ms'],
  maxAttempts: 10,
  prefetch: 10,
  inbox: { adapter: pgOutboxAdapter(pool), table: CHAOS_INBOX },
})(ApplyHandler.prototype, 'apply', apply);

class ConsumerModule {}
Module({
  imports: [
    RetryModule.forRoot({
      url: CHAOS_URL,
      connectionName: CHAOS_CONNECTION,
      reconnect: { initialDelay: '100ms', maxDelay: '1s' },
      delayedDelivery: false,
    }),
  ],
  providers: [ApplyHandler],
})(ConsumerModule);

const app = await NestFactory.createApplicationContext(ConsumerModule, { logger: ['error', 'warn'] });
await app.init();
process.send?.('ready');
