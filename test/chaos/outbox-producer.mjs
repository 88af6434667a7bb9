// The producing process of the outbox chaos test: writes business rows, each with its outbox message in the same
// transaction, and relays the outbox (the relay runs in this process). Resumes after a SIGKILL from the last
// committed row. Plain ESM on the built library; configuration from the environment the test sets.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { OutboxPublisher, RetryModule, pgOutboxAdapter } from 'nestjs-amqp-retry';

const { CHAOS_URL, CHAOS_QUEUE, CHAOS_CONNECTION, CHAOS_POSTGRES_URL, CHAOS_ORDERS, CHAOS_OUTBOX, CHAOS_N } = process.env;
const N = Number(CHAOS_N);
const pool = new pg.Pool({ connectionString: CHAOS_POSTGRES_URL, max: 8 });
pool.on('error', () => undefined);

class ProducerModule {}
Module({
  imports: [
    RetryModule.forRoot({
      url: CHAOS_URL,
      connectionName: CHAOS_CONNECTION,
      reconnect: { initialDelay: '100ms', maxDelay: '1s' },
      delayedDelivery: false,
      outbox: { adapter: pgOutboxAdapter(pool), table: CHAOS_OUTBOX, retryDelay: { initial: '100ms', max: '1s' }, maxUnroutableAttempts: 1000 },
    }),
  ],
})(ProducerModule);

const app = await NestFactory.createApplicationContext(ProducerModule, { logger: ['error', 'warn'] });
await app.init();
const outbox = app.get(OutboxPublisher);
const { rows } = await pool.query(`SELECT COALESCE(max(id), -1) + 1 AS next FROM "${CHAOS_ORDERS}"`);
process.send?.('ready');
for (let id = rows[0].next; id < N; id++) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`INSERT INTO "${CHAOS_ORDERS}" (id) VALUES ($1)`, [id]);
    await outbox.publish(client, { exchange: '', routingKey: CHAOS_QUEUE, body: { id } });
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    console.error(`order ${id}: ${error}`);
    id--; // try it again
    await new Promise((resolve) => setTimeout(resolve, 100));
  } finally {
    client.release();
  }
}
// Written: the relay goes on until the test stops this process.
