import { randomUUID } from 'node:crypto';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import pg from 'pg';
import { firstValueFrom } from 'rxjs';
import { PostgresIdempotencyStore, RedisIdempotencyStore, RetryPublisher, type PgLikePool } from 'nestjs-amqp-retry';
import { RetryClient, RetryServer } from 'nestjs-amqp-retry/transport';
import { handlerFor, handlerOf, startApp } from '../support/app.js';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { closeConnections } from '../support/broker-control.js';
import { POSTGRES_URL, REDIS_URL, uniqueSpace } from '../support/stores.js';
import { settleWindow, SUITE_OPTIONS, useSuite } from '../support/suite.js';

/**
 * Durations beyond 2^31-1 ms (about 24.8 days), which a single Node timer cannot wait: Node fires such a timer after
 * 1 ms. Every duration the configuration accepts must work as written, at each of the places that arms a timer.
 */
const DAYS_30 = '30d';

@Controller()
class SlowAnswerController {
  @MessagePattern('slow.answer')
  async answer(@Payload() query: { id: number; ms: number }): Promise<{ id: number; answered: true }> {
    await new Promise((resolve) => setTimeout(resolve, query.ms));
    return { id: query.id, answered: true };
  }
}

@Module({ controllers: [SlowAnswerController] })
class SlowAnswerModule {}

describe('long durations (30 days, 100 days) work as written', () => {
  const suite = useSuite('e2e.long-durations');

  it('requestTimeout 30d: a request that takes 300 ms is answered, not ended by a timeout', async () => {
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false, requestTimeout: DAYS_30 });
    const app: INestMicroservice = await NestFactory.createMicroservice(SlowAnswerModule, { strategy: server, logger: false });
    suite.app = app;
    await app.listen();
    const client = new RetryClient({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false });
    try {
      await expect(firstValueFrom(client.send('slow.answer', { id: 1, ms: 300 }))).resolves.toEqual({ id: 1, answered: true });
    } finally {
      await client.close();
    }
  });

  it('shutdownTimeout 30d: app.close() waits for the handler in flight, which finishes and is acked once', async () => {
    let finished = 0;
    const Handler = handlerFor({ queue: suite.queue, delays: [100] }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 800));
      finished++;
    });
    const app = await startApp([Handler], { ...SUITE_OPTIONS, shutdownTimeout: DAYS_30 });
    suite.app = app;
    await suite.broker.publish('', suite.queue, { n: 1 });
    await waitFor(() => handlerOf(app, Handler).calls.length === 1, 'the handler started');
    await app.close();
    suite.app = undefined;
    expect(finished).toBe(1); // close() returned only after the handler
    expect(await suite.broker.count(suite.queue)).toBe(0); // acked, not left for redelivery
  });

  it.each([
    ['confirmTimeout', { confirmTimeout: DAYS_30 }],
    ['connectTimeout', { connectTimeout: DAYS_30 }],
  ])('%s 30d: the application starts and every publish is confirmed and handled', async (_name, limits) => {
    const Handler = handlerFor({ queue: suite.queue, delays: [100] }, () => undefined);
    const app = await startApp([Handler, RetryPublisher], { ...SUITE_OPTIONS, ...limits });
    suite.app = app;
    const publisher = app.get(RetryPublisher);
    for (let n = 0; n < 10; n++) await publisher.publish('', suite.queue, { n });
    await waitFor(() => handlerOf(app, Handler).calls.length === 10, 'ten handler calls');
  });

  it('publishTimeout 30d: a publish made while the publishing connection is lost waits for the reconnection and is confirmed', async () => {
    const connectionName = `e2e-long-${randomUUID()}`;
    const Handler = handlerFor({ queue: suite.queue, delays: [100] }, () => undefined);
    const options = { ...SUITE_OPTIONS, connectionName, publishTimeout: DAYS_30, reconnect: { initialDelay: '200ms' } };
    const app = await startApp([Handler, RetryPublisher], options);
    suite.app = app;
    const publisher = app.get(RetryPublisher);
    await publisher.publish('', suite.queue, { n: 0 });
    expect(await closeConnections(`${connectionName} publish`)).toBe(1);
    await publisher.publish('', suite.queue, { n: 1 }); // waits for the reconnection (200 ms), not 1 ms
    await waitFor(() => handlerOf(app, Handler).calls.length === 2, 'both messages handled');
  });

  it('claimTtl 100d: a claim held for a second is not renewed in a loop (Redis commands counted with MONITOR)', async () => {
    const space = uniqueSpace();
    const store = new RedisIdempotencyStore({ url: REDIS_URL, keyPrefix: `${space}:` });
    // No ready check: ioredis would send INFO on the monitor's connection, and a MONITOR line arriving before its reply
    // fails the connection ("Command queue state error").
    const client = new Redis(REDIS_URL, { enableReadyCheck: false });
    const monitor = await client.monitor(); // a connection of its own
    const commands: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args.some((arg) => arg.startsWith(`${space}:`))) commands.push(args[0].toLowerCase());
    });
    try {
      const Handler = handlerFor({ queue: suite.queue, delays: [100] }, () => new Promise((resolve) => setTimeout(resolve, 1_000)));
      const app = await startApp([Handler], { ...SUITE_OPTIONS, idempotency: { store, claimTtl: '100d', ttl: '366d' } });
      suite.app = app;
      await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'long-claim' });
      await waitFor(() => handlerOf(app, Handler).calls.length === 1, 'the handler started');
      await waitFor(async () => (await suite.broker.count(suite.queue)) === 0 && commands.length >= 2, 'the message handled and recorded', 15_000);
      await settleWindow(200);
      // claim and record: two scripts on the message's key; a renewal loop would add hundreds a second.
      expect(commands.length).toBeLessThanOrEqual(3);
    } finally {
      monitor.disconnect();
      client.disconnect();
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${space}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
  });

  it('cleanupInterval 30d: the PostgreSQL store does not run its cleanup DELETE in a loop (counted on the pool it was given)', async () => {
    const table = uniqueSpace();
    const real = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
    let cleanups = 0;
    const pool: PgLikePool = {
      query: (text, values) => {
        if (/^DELETE .* expires_at <=/s.test(text)) cleanups++;
        return real.query(text, values);
      },
      end: () => Promise.resolve(), // the store leaves a pool it was given open
    };
    try {
      const store = new PostgresIdempotencyStore({ pool, table, cleanupInterval: DAYS_30 });
      const Handler = handlerFor({ queue: suite.queue, delays: [100] }, () => undefined);
      const app = await startApp([Handler], { ...SUITE_OPTIONS, idempotency: { store } });
      suite.app = app;
      await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'cleanup' });
      await waitFor(() => handlerOf(app, Handler).calls.length === 1, 'the handler called (the store opened, its cleanup armed)');
      await settleWindow(1_000);
      expect(cleanups).toBe(0);
    } finally {
      await suite.app?.close();
      suite.app = undefined;
      await real.query(`DROP TABLE IF EXISTS "${table}"`);
      await real.end();
    }
  });
});
