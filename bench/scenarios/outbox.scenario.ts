// Scenario 6, the transactional outbox: what the outbox costs against publishing directly.
//   latency:    `messages` transactions paced at `perSecond`, each writing one outbox row; commit-to-delivery is the
//               time from the COMMIT call to the message's arrival at a consumer (NOTIFY wakes the relay, which
//               claims, publishes with confirms and marks the row): p50/p99/max per round;
//   throughput: `drainRows` rows already committed, drained by one relay (batches of 100): messages delivered per
//               second, against `RetryPublisher.publish` of as many messages, at most 100 awaiting their confirm.
// One process holds the application and the consumer, as a service that publishes and a consumer on one machine
// would. Needs PostgreSQL (POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/test).
// Run alone: node bench/dist/scenarios/outbox.scenario.js
import { randomUUID } from 'node:crypto';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import amqp from 'amqplib';
import pg from 'pg';
import { OutboxPublisher, RetryPublisher, RetryModule, pgOutboxAdapter } from 'nestjs-amqp-retry';
import { fixed, int } from '../report/format.js';
import { progress, runScenario } from '../runner/scenario-process.js';
import { latenessSpread, spread } from '../runner/stats.js';
import { settings } from '../settings.js';
import type { OutboxResult } from './results.js';

const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const IN_FLIGHT = 100;

async function app(url: string, pool: pg.Pool, table: string, relay: boolean) {
  // The relay's own pool (a claim holds a client while it publishes): writers queueing for clients would delay it.
  @Module({
    imports: [
      RetryModule.forRoot({
        url,
        delayedDelivery: false,
        outbox: { adapter: pgOutboxAdapter(pool), table, relay, concurrency: Number(process.env.BENCH_OUTBOX_CONCURRENCY ?? 2) },
      }),
    ],
  })
  class BenchOutboxModule {}
  const context = await NestFactory.createApplicationContext(BenchOutboxModule, { logger: false });
  return context;
}

async function inTransaction(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<void>): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await work(client);
    const commitAt = performance.now();
    await client.query('COMMIT');
    return commitAt;
  } finally {
    client.release();
  }
}

runScenario('outbox', async (): Promise<OutboxResult> => {
  const { messages, perSecond, drainRows } = settings.outbox;
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 20 });
  const relayPool = new pg.Pool({ connectionString: POSTGRES_URL, max: 8 });
  const broker = await amqp.connect(settings.url);
  const channel = await broker.createChannel();
  const sink = `bench.outbox.sink.${randomUUID().slice(0, 8)}`;
  const tables: string[] = [];
  await channel.assertQueue(sink, { durable: true });
  const arrivals = new Map<string, number>();
  let arrived = 0;
  let onArrival = () => undefined as void;
  await channel.consume(sink, (m) => {
    if (!m) return;
    arrivals.set(String(m.properties.messageId), performance.now());
    arrived++;
    onArrival();
    channel.ack(m);
  });
  const until = (count: number) =>
    new Promise<void>((resolve) => {
      onArrival = () => arrived >= count && resolve();
      onArrival();
    });
  const rounds: Array<{ latencies: number[]; relayPerSecond: number; plainPerSecond: number }> = [];
  try {
    for (let round = 1; round <= settings.rounds; round++) {
      const table = `bench_outbox_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
      tables.push(table);
      // Latency: paced transactions, one row each, relayed at once.
      const live = await app(settings.url, relayPool, table, true);
      await live.init();
      const outbox = live.get(OutboxPublisher);
      arrived = 0;
      arrivals.clear();
      const committed = new Map<string, number>();
      const started = performance.now();
      const writes: Promise<void>[] = [];
      for (let i = 0; i < messages; i++) {
        const due = started + (i * 1000) / perSecond;
        const wait = due - performance.now();
        if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
        const messageId = `latency-${round}-${i}`;
        writes.push(
          inTransaction(pool, (client) =>
            outbox.publish(client, { exchange: '', routingKey: sink, body: { i }, properties: { messageId } }).then(() => undefined),
          ).then((at) => void committed.set(messageId, at)),
        );
      }
      await Promise.all(writes);
      await until(messages);
      const latencies = [...committed].map(([id, at]) => (arrivals.get(id) ?? Infinity) - at);
      const l = latenessSpread([latencies]);
      progress(
        'outbox',
        round,
        `commit to delivery at ${int(perSecond)}/s: p50 ${fixed(l.p50.median)} ms, p99 ${fixed(l.p99.median)} ms, max ${fixed(l.max.median)} ms`,
      );

      // Throughput: plain publishes first, on the same application (its connection is open).
      const publisher = live.get(RetryPublisher);
      arrived = 0;
      let next = 0;
      const plainStart = performance.now();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < drainRows) {
            const i = next++;
            await publisher.publish('', sink, { i }, { messageId: `plain-${round}-${i}` });
          }
        }),
      );
      await until(drainRows);
      const plainPerSecond = (drainRows / (performance.now() - plainStart)) * 1000;
      await live.close();

      // The relay's drain: rows committed with no relay running, then one relay started.
      const writer = await app(settings.url, relayPool, table, false);
      await writer.init();
      const writerOutbox = writer.get(OutboxPublisher);
      for (let t = 0; t < drainRows / 100; t++) {
        await inTransaction(pool, async (client) => {
          for (let r = 0; r < 100; r++) {
            await writerOutbox.publish(client, {
              exchange: '',
              routingKey: sink,
              body: { t, r },
              properties: { messageId: `drain-${round}-${t}-${r}` },
            });
          }
        });
      }
      await writer.close();
      arrived = 0;
      const relayStart = performance.now();
      const relay = await app(settings.url, relayPool, table, true);
      await relay.init();
      await until(drainRows);
      const relayPerSecond = (drainRows / (performance.now() - relayStart)) * 1000;
      await relay.close();
      progress(
        'outbox',
        round,
        `drain of ${int(drainRows)}: relay ${int(relayPerSecond)} msg/s, RetryPublisher.publish ${int(plainPerSecond)} msg/s`,
      );
      rounds.push({ latencies, relayPerSecond, plainPerSecond });
    }
  } finally {
    await channel.deleteQueue(sink).catch(() => undefined);
    await broker.close().catch(() => undefined);
    for (const table of tables) await pool.query(`DROP TABLE IF EXISTS "${table}"`).catch(() => undefined);
    await pool.end();
    await relayPool.end();
  }
  return {
    rounds: rounds.length,
    messages,
    perSecond,
    drainRows,
    latency: latenessSpread(rounds.map((r) => r.latencies)),
    relayPerSecond: spread(rounds.map((r) => r.relayPerSecond)),
    plainPerSecond: spread(rounds.map((r) => r.plainPerSecond)),
    relayVsPlain: spread(rounds.map((r) => r.relayPerSecond / r.plainPerSecond)),
  };
});
