import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { NotConnectedError, RetryPublisher } from 'nestjs-amqp-retry';
import { AmqpConnection } from '../../libs/amqp-retry/src/amqp/amqp.connection.js';
import { QueueConsumer } from '../../libs/amqp-retry/src/amqp/queue.consumer.js';
import { createApp, handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { ctl } from '../support/broker-control.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

/** Connections whose name starts with `prefix`, as the broker lists them. */
async function connectionsNamed(prefix: string): Promise<number> {
  const lines = (await ctl('list_connections', 'client_properties', '-q', '--no-table-headers')).split('\n');
  return lines.filter((line) => line.includes(`{"connection_name","${prefix}`)).length;
}

/** Races between the application's lifecycle (start, stop, close) and the broker's connection. */
describe('lifecycle races', () => {
  const suite = useSuite('e2e.races');

  it('rejects a publish after close() at once, and opens no connection that would keep the process alive', async () => {
    const connectionName = `e2e-${randomUUID()}`;
    suite.app = await startApp([], { ...TEST_OPTIONS, connectionName });
    const publisher = suite.app.get(RetryPublisher);
    await publisher.publish('', uniqueName('nowhere'), {}).catch(() => undefined); // opens the publishing connection
    await suite.app.close();
    suite.app = undefined;
    const startedAt = Date.now();
    await expect(publisher.publish('', suite.queue, { late: true })).rejects.toBeInstanceOf(NotConnectedError);
    expect(Date.now() - startedAt).toBeLessThan(1_000);
    await waitFor(async () => (await connectionsNamed(connectionName)) === 0, 'no connection left');
    await new Promise((resolve) => setTimeout(resolve, 300)); // a settle window: none is opened later
    expect(await connectionsNamed(connectionName)).toBe(0);
  });

  it('gives up connecting to a black-holed broker after connectTimeout, naming the URL with its password masked', async () => {
    const sockets = new Set<net.Socket>();
    const blackHole = net.createServer((socket) => void sockets.add(socket)); // accepts, never answers
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    const { port } = blackHole.address() as net.AddressInfo;
    try {
      suite.app = await createApp([handlerFor({ queue: suite.queue }, () => undefined)], {
        ...TEST_OPTIONS,
        url: `amqp://guest:secret@127.0.0.1:${port}`,
        connectTimeout: '500ms',
      });
      const startedAt = Date.now();
      const failure = await suite.app.init().then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(Date.now() - startedAt).toBeLessThan(1_500);
      expect(failure?.message).toMatch(new RegExp(`amqp://guest:\\*\\*\\*@127\\.0\\.0\\.1:${port}.*within 500 ms`));
      expect(failure?.message).not.toContain('secret');
    } finally {
      await suite.app?.close();
      suite.app = undefined;
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => blackHole.close(resolve));
    }
  });

  it('after a reconnection, one handler whose queue now refuses its declaration (406) does not keep the others down', async () => {
    const proxy = await new TcpProxy().start();
    const other = uniqueName('e2e.races.other');
    const logger = new RecordingLogger();
    try {
      const Broken = handlerFor({ queue: suite.queue }, () => undefined);
      const Healthy = handlerFor({ queue: other }, () => undefined);
      suite.app = await createApp([Broken, Healthy], { ...TEST_OPTIONS, url: proxy.url, reconnect: { initialDelay: '50ms', maxDelay: '200ms' } });
      suite.app.useLogger(logger);
      await suite.app.init();
      await proxy.cut();
      await suite.broker.channel.deleteQueue(suite.queue);
      await suite.broker.declareQueue(suite.queue); // in the way: without the dead-letter argument the library declares
      await proxy.restore();
      await waitFor(async () => (await suite.broker.consumers(other)) === 1, 'the healthy handler consuming again');
      await suite.broker.publish('', other, { n: 1 });
      await waitFor(() => handlerOf(suite.app!, Healthy).calls.length === 1, 'the healthy handler handling');
      await suite.broker.channel.deleteQueue(suite.queue); // out of the way: the broken one recovers too
      await waitFor(async () => (await suite.broker.consumers(suite.queue)) === 1, 'the broken handler back', 15_000).catch((error: Error) => {
        throw new Error(`${error.message}; the library logged:\n${logger.lines.join('\n')}`);
      });
    } finally {
      await suite.app?.close();
      suite.app = undefined;
      await suite.broker.deleteRetryTopology(other);
      await proxy.stop();
    }
  });

  it('leaves one consumer when start() is called twice at once, and none when stop() comes during start()', async () => {
    await suite.broker.declareQueue(suite.queue);
    const connection = await AmqpConnection.open(
      { urls: [AMQP_URL], name: `e2e-${randomUUID()}`, reconnect: { initialDelayMs: 50, maxDelayMs: 100 }, connectTimeoutMs: 5_000 },
      quiet,
    );
    try {
      const options = {
        queue: suite.queue,
        prefetch: 1,
        connection,
        logger: quiet,
        resume: { initialDelayMs: 50, maxDelayMs: 100 },
        redeclare: async () => undefined,
      };
      const twice = new QueueConsumer(options, async (_m, settle) => settle.ack());
      await Promise.all([twice.start(), twice.start()]);
      expect(await suite.broker.consumers(suite.queue)).toBe(1);
      await twice.stop(100);
      expect(await suite.broker.consumers(suite.queue)).toBe(0);

      const stopped = new QueueConsumer(options, async (_m, settle) => settle.ack());
      const starting = stopped.start();
      await stopped.stop(100);
      await starting;
      await new Promise((resolve) => setTimeout(resolve, 200)); // a settle window: no orphan consumer appears
      expect(await suite.broker.consumers(suite.queue)).toBe(0);
    } finally {
      await connection.close();
    }
  });
});
