import type { INestApplicationContext } from '@nestjs/common';
import { RetryEngine, TopologyMismatchError, type RetryHandlerOptions } from 'nestjs-amqp-retry';
import { createApp, handlerFor, startApp, TEST_OPTIONS } from '../support/app.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { waitFor } from '../support/broker.js';
import { usePartitionSuite } from '../support/partitions.js';

/** What a partitioned handler hashes and orders by: a changed key, the empty key, keys over 512 characters. */
describe('partition keys on a real broker', () => {
  const suite = usePartitionSuite('e2e.parts.keys', 4);

  const options = (header: string, extra: Partial<RetryHandlerOptions> = {}): RetryHandlerOptions => ({
    queue: suite.queue,
    delays: ['200ms'],
    prefetch: 50,
    partitions: { count: 4, key: { header }, heartbeat: '200ms' },
    ...extra,
  });
  const allTaken = (app: INestApplicationContext) =>
    waitFor(
      () =>
        app
          .get(RetryEngine)
          .partitions()[0]
          ?.partitions.every((p) => p.consuming),
      'every partition taken',
      5_000,
    );

  it('refuses a start whose key header differs from the one the hash exchange hashes; deleting the exchange changes the key', async () => {
    const first = await startApp([handlerFor(options('x-key'), () => undefined)], TEST_OPTIONS);
    await first.close();

    // RabbitMQ accepts the redeclare with hash-header x-customer and goes on hashing x-key: the start must fail.
    const calls: string[] = [];
    const Changed = handlerFor(options('x-customer'), (_payload, ctx) => void calls.push(ctx.queue));
    const failure = await startApp([Changed], TEST_OPTIONS).catch((error: unknown) => error);
    if (!(failure instanceof Error)) suite.apps.push(failure as INestApplicationContext); // started: closed after the test
    expect(failure).toBeInstanceOf(TopologyMismatchError);
    const message = (failure as Error).message;
    expect(message).toContain("partitions.key { header: 'x-customer' }");
    expect(message).toContain("was declared with partitions.key { header: 'x-key' }");
    expect(message).toContain(`delete the exchange "${suite.queue}"`);
    expect(message).toContain("set partitions.key back to { header: 'x-key' }");

    // The documented way to change the key: every instance stopped, the exchange deleted, the start declares it anew.
    await suite.broker.channel.deleteExchange(suite.queue);
    const app = await startApp([Changed], TEST_OPTIONS);
    suite.apps.push(app);
    await allTaken(app);
    for (let i = 0; i < 40; i++) await suite.broker.publish(suite.queue, '', { i }, { headers: { 'x-customer': `c${i}` } });
    await waitFor(() => calls.length === 40, '40 calls', 15_000);
    // Hashed by x-customer: 40 customers over 4 partitions (by x-key, absent, all would land in one).
    expect(new Set(calls).size).toBeGreaterThanOrEqual(3);
  });

  it('takes a hash exchange without a record (an older start) to hash the configured key, warns, and holds later starts to it', async () => {
    await suite.broker.channel.assertExchange(suite.queue, 'x-consistent-hash', { durable: true, arguments: { 'hash-header': 'x-key' } });
    const logger = new RecordingLogger();
    const first = await createApp([handlerFor(options('x-key'), () => undefined)], TEST_OPTIONS);
    first.useLogger(logger);
    await first.init();
    await first.close();
    expect(logger.count(new RegExp(`"${suite.queue}": the hash exchange "${suite.queue}" exists without a record of what it hashes`))).toBe(1);
    const failure = await startApp([handlerFor(options('x-customer'), () => undefined)], TEST_OPTIONS).catch((error: unknown) => error);
    if (!(failure instanceof Error)) suite.apps.push(failure as INestApplicationContext);
    expect(failure).toBeInstanceOf(TopologyMismatchError);
  });

  it("declares the hash exchange deleted while the application runs again, with the partitions and the handler's exchange bound, and warns once", async () => {
    const upstream = `${suite.queue}.in`;
    suite.extraExchanges.push(upstream);
    const calls: string[] = [];
    const Handler = handlerFor(options('x-key', { exchange: upstream, routingKey: 'acc.*' }), (_payload, ctx) => void calls.push(ctx.queue));
    const logger = new RecordingLogger();
    const app = await createApp([Handler], TEST_OPTIONS);
    app.useLogger(logger);
    await app.init();
    suite.apps.push(app);
    await allTaken(app);
    await suite.broker.channel.deleteExchange(suite.queue);
    const missing = new RegExp(`"${suite.queue}": the hash exchange "${suite.queue}" was deleted while the application runs`);
    await waitFor(
      () => logger.count(new RegExp(`declared the hash exchange "${suite.queue}" again`)) === 1,
      'the hash exchange declared again',
      5_000,
    );
    expect(logger.count(missing)).toBe(1);
    for (let i = 0; i < 40; i++) await suite.broker.publish(upstream, 'acc.x', { i }, { headers: { 'x-key': `k${i}` } });
    await waitFor(() => calls.length === 40, '40 calls', 15_000).catch((error: Error) => {
      throw new Error(`${error.message}; ${calls.length} handled`);
    });
    // Every partition bound again: 40 keys over 4 partitions reach more than one.
    expect(new Set(calls).size).toBeGreaterThanOrEqual(3);
    expect(logger.count(missing)).toBe(1);
  });

  it('keeps the order of the empty key, which the broker hashes like any other value', async () => {
    const finished: number[] = [];
    let running = 0;
    let overlap = 0;
    const Handler = handlerFor(options('x-key'), async (payload) => {
      const { seq } = payload as { seq: number };
      if (++running > 1) overlap++;
      await new Promise((resolve) => setTimeout(resolve, (30 - seq) * 3)); // later messages are quicker: overlap shows
      running--;
      finished.push(seq);
    });
    const app = await startApp([Handler], TEST_OPTIONS);
    suite.apps.push(app);
    await allTaken(app);
    for (let seq = 0; seq < 30; seq++)
      suite.broker.channel.publish(suite.queue, '', Buffer.from(JSON.stringify({ seq })), {
        headers: { 'x-key': '' },
        contentType: 'application/json',
      });
    await (suite.broker.channel as unknown as { waitForConfirms(): Promise<void> }).waitForConfirms();
    await waitFor(() => finished.length === 30, '30 calls', 15_000);
    expect(overlap).toBe(0);
    expect(finished).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });

  it('runs keys over 512 characters in order, none parked', async () => {
    const long = 'k'.repeat(600);
    const seen: number[] = [];
    const Handler = handlerFor(options('x-key'), async (payload) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      seen.push((payload as { seq: number }).seq);
    });
    const app = await startApp([Handler], TEST_OPTIONS);
    suite.apps.push(app);
    await allTaken(app);
    for (let seq = 0; seq < 10; seq++)
      suite.broker.channel.publish(suite.queue, '', Buffer.from(JSON.stringify({ seq })), {
        headers: { 'x-key': long },
        contentType: 'application/json',
      });
    await (suite.broker.channel as unknown as { waitForConfirms(): Promise<void> }).waitForConfirms();
    await waitFor(() => seen.length === 10, '10 calls', 15_000);
    expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => i));
    for (let i = 0; i < 4; i++) expect(await suite.broker.count(`${suite.queue}.p${i}.error`)).toBe(0);
  });
});
