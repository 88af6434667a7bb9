import { randomUUID } from 'node:crypto';
import type { INestApplicationContext, Provider } from '@nestjs/common';
import { RetryPublisher, type RetryModuleOptions } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { closeConnections } from '../support/broker-control.js';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { useSuite } from '../support/suite.js';

/** AMQP_URL as the logs must show it, as a pattern: the password masked, the rest as given. */
const shownUrl = AMQP_URL.replace(/^(amqps?:\/\/[^:@/]*:)[^@/]*@/i, '$1***@').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

describe('reliability: reconnects, publishing while down, shutdown', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  const suite = useSuite('e2e.reliable', { afterAll: () => process.off('unhandledRejection', onUnhandled) });

  beforeAll(() => {
    process.on('unhandledRejection', onUnhandled);
  });
  beforeEach(() => {
    unhandled.length = 0;
  });
  afterEach(() => {
    expect(unhandled).toEqual([]); // declared after the suite's cleanup: what the app's close left unhandled counts too
  });

  type Start = (providers: Provider[], options: RetryModuleOptions) => Promise<INestApplicationContext>;
  /**
   * Runs `work` with a TCP proxy in front of the broker, and `start`, which starts the test's app through it (with
   * TEST_OPTIONS and `options`); the suite closes the app before it stops the proxy.
   */
  const throughProxy = async (work: (proxy: TcpProxy, start: Start) => Promise<void>) => {
    const proxy = await new TcpProxy().start();
    suite.afterThis(() => proxy.stop());
    await work(proxy, async (providers, options) => (suite.app = await startApp(providers, { ...TEST_OPTIONS, url: proxy.url, ...options })));
  };

  it('reconnects after the broker closes its connections, resumes consuming, and logs outage and recovery once per connection', async () => {
    const { broker, queue } = suite;
    const connectionName = `e2e-${randomUUID()}`;
    const Handler = handlerFor({ queue }, () => undefined);
    const app = (suite.app = await startApp([Handler], { ...TEST_OPTIONS, connectionName, reconnect: { initialDelay: '50ms' } }));
    const logger = new RecordingLogger();
    app.useLogger(logger);
    await broker.publish('', queue, { n: 1 });
    await waitFor(() => handlerOf(app, Handler).calls.length === 1, 'the first message');

    expect(await closeConnections(connectionName)).toBe(2); // the consuming and the publishing connection
    await broker.publish('', queue, { n: 2 });
    await waitFor(() => handlerOf(app, Handler).calls.length === 2, 'the message after the outage');
    await app.get(RetryPublisher).publish('', queue, { n: 3 });
    await waitFor(() => handlerOf(app, Handler).calls.length === 3, 'a message published after the outage');

    expect(logger.count(new RegExp(`^error Lost the connection to RabbitMQ at ${shownUrl} \\(.*CONNECTION_FORCED.*\\); reconnecting$`))).toBe(2);
    expect(logger.count(new RegExp(`^log Reconnected to RabbitMQ at ${shownUrl} after \\d+ ms \\(\\d+ attempts?\\)$`))).toBe(2);
    // The consumer resumes before the rest of the recovery (its presence queue) is done: the line comes after.
    await waitFor(() => logger.count(/^log Resumed consuming 1 queue\(s\)$/) > 0, 'the recovery logged');
    expect(logger.count(/^log Resumed consuming 1 queue\(s\)$/)).toBe(1);
    expect(logger.lines.join('\n')).not.toContain('guest:guest');
    expect(logger.count(/^error /)).toBe(2); // the outages, nothing else
  });

  it('declares a deleted queue again and resumes consuming, without touching the connection', async () => {
    const { broker, queue } = suite;
    const exchange = uniqueName('e2e.reliable.x');
    const Handler = handlerFor({ queue, exchange, routingKey: 'k', delays: [100] }, (_, ctx) => {
      if (ctx.attempt === 1) throw new Error('once');
    });
    suite.extraExchanges.push(exchange);
    const app = (suite.app = await startApp([Handler], { ...TEST_OPTIONS, reconnect: { initialDelay: '50ms' } }));
    const logger = new RecordingLogger();
    app.useLogger(logger);
    await broker.channel.deleteQueue(queue);
    // consuming again means declared again, bindings included: the consumer starts after the topology
    await waitFor(async () => logger.count(/cancelled the consumer/) === 1 && (await broker.consumers(queue)) === 1, 'a consumer on the queue again');
    await broker.publish(exchange, 'k', { n: 1 });
    await waitFor(() => handlerOf(app, Handler).calls.length === 2, 'the message and its retry');
    expect(handlerOf(app, Handler).calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(logger.count(/Lost the connection/)).toBe(0);
  });

  it('redelivers the messages whose handlers were running when the network dropped: none lost', () =>
    throughProxy(async (proxy, start) => {
      const { broker, queue } = suite;
      const Handler = handlerFor({ queue }, () => new Promise((resolve) => setTimeout(resolve, 1_000)));
      const app = await start([Handler], { reconnect: { initialDelay: '50ms' } });
      for (let n = 0; n < 10; n++) await broker.publish('', queue, { n });
      // All ten delivered before the cut (each handler runs 1 s): a message still on its way when the network drops
      // comes back marked redelivered although no handler ran it, which is right, but not what this test counts.
      await waitFor(() => handlerOf(app, Handler).calls.length === 10, 'ten handlers in flight');
      await proxy.cut(); // their acks can no longer reach the broker, which requeues the messages
      await proxy.restore();

      const calls = handlerOf(app, Handler).calls;
      const distinct = () => new Set(calls.map((c) => (c.payload as { n: number }).n)).size;
      await waitFor(() => distinct() === 10, 'every message handled', 15_000);
      // The interrupted ones come back; wait for them rather than for an empty queue, which the broker may show
      // for a moment before it notices the connection is gone.
      await waitFor(() => calls.filter((c) => c.redelivered).length >= 5, 'the interrupted messages redelivered', 15_000);
      await waitFor(async () => (await broker.count(queue)) === 0, 'an empty queue');
      expect(calls.filter((c) => !c.redelivered)).toHaveLength(10);
    }));

  it('keeps trying to recover after a reconnection until the topology can be declared again', () =>
    throughProxy(async (proxy, start) => {
      const { broker, queue } = suite;
      const Handler = handlerFor({ queue }, () => undefined);
      const app = await start([Handler], { reconnect: { initialDelay: '50ms', maxDelay: '200ms' } });
      const logger = new RecordingLogger();
      app.useLogger(logger);
      await proxy.cut();
      await broker.channel.deleteQueue(queue);
      await broker.declareQueue(queue); // in the way: without the dead-letter exchange the library declares
      await proxy.restore();
      await waitFor(
        () =>
          logger.count(/^error Recovery after reconnecting failed \(.*inequivalent arg 'x-dead-letter-exchange'.*\); trying again in \d+ ms$/) >= 2,
        'failed recoveries',
      );
      await broker.channel.deleteQueue(queue); // out of the way

      await waitFor(async () => (await broker.consumers(queue)) === 1, 'the consumer back');
      await broker.publish('', queue, { n: 1 });
      await waitFor(() => handlerOf(app, Handler).calls.length === 1, 'the message after recovery');
    }));

  it('holds publishes while the connection is down, resolves them when it is back, and bounds the wait', () =>
    throughProxy(async (proxy, start) => {
      const { queue } = suite;
      const Handler = handlerFor({ queue }, () => undefined);
      const app = await start([Handler], { reconnect: { initialDelay: '100ms', maxDelay: '200ms' }, publishTimeout: '400ms', publishBufferSize: 2 });
      const publisher = app.get(RetryPublisher);
      await proxy.cut();
      await waitFor(
        async () =>
          (await publisher.publish('', queue, {}).then(
            () => false,
            (e: Error) => e.message,
          )) || undefined,
        'a failing publish',
      );

      const startedAt = Date.now();
      await expect(publisher.publish('', queue, { late: true })).rejects.toThrow(/no connection to RabbitMQ within 400 ms/);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(390);

      const first = publisher.publish('', queue, { held: 1 });
      const second = publisher.publish('', queue, { held: 2 });
      await expect(publisher.publish('', queue, { held: 3 })).rejects.toThrow(/2 publishes already wait for it \(publishBufferSize\)/);
      await proxy.restore();
      await Promise.all([first, second]);
      await waitFor(() => handlerOf(app, Handler).calls.length === 2, 'the held messages');
      expect(handlerOf(app, Handler).calls.map((c) => c.payload)).toEqual([{ held: 1 }, { held: 2 }]);
    }));

  it('sends a publish whose channel was opening when the connection dropped once the connection is back', () =>
    throughProxy(async (proxy, start) => {
      const { queue } = suite;
      const Handler = handlerFor({ queue }, () => undefined);
      const app = await start([Handler], { reconnect: { initialDelay: '50ms', maxDelay: '200ms' } });
      const publisher = app.get(RetryPublisher);
      await expect(publisher.publish(uniqueName('e2e.missing'), 'k', {})).rejects.toThrow(/NOT_FOUND/); // the channel closed
      proxy.stall(); // the Open of the next channel waits in the link
      const waiting = publisher.publish('', queue, { n: 1 });
      const outcome = waiting.then(
        () => 'sent',
        (error: Error) => error.message,
      );
      await new Promise((resolve) => setTimeout(resolve, 100)); // the Open is written, unanswered
      await proxy.cut(); // and the connection drops under it
      await proxy.restore();
      expect(await outcome).toBe('sent');
      await waitFor(() => handlerOf(app, Handler).calls.length === 1, 'the message');
      expect(handlerOf(app, Handler).calls.map((c) => c.payload)).toEqual([{ n: 1 }]);
    }));

  it('bounds graceful shutdown: a handler still running after shutdownTimeout is abandoned and its message stays', async () => {
    const { broker, queue } = suite;
    let release: () => void = () => undefined;
    const stuck = new Promise<void>((resolve) => (release = resolve));
    const Handler = handlerFor({ queue }, () => stuck);
    const app = (suite.app = await startApp([Handler], { ...TEST_OPTIONS, shutdownTimeout: '200ms' }));
    await broker.publish('', queue, { n: 1 });
    await waitFor(() => handlerOf(app, Handler).calls.length === 1, 'the handler to start');
    const started = Date.now();
    await app.close();
    suite.app = undefined;
    expect(Date.now() - started).toBeLessThan(1_500);
    await waitFor(async () => (await broker.count(queue)) === 1, 'the message back in the queue');
    release(); // the abandoned handler ends; its ack is dropped, the message stays
    await new Promise((resolve) => setImmediate(resolve));
    expect(await broker.count(queue)).toBe(1);
  });
});
