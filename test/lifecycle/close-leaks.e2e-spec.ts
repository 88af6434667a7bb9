import { NotConnectedError, ParkedMessages, RetryEngine } from 'nestjs-amqp-retry';
import { RetryClient, RetryServer } from 'nestjs-amqp-retry/transport';
import { createApp, handlerFor, TEST_OPTIONS } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { deletePartitionedTopology, requireHashExchange } from '../support/partitions.js';
import { settleWindow, useSuite } from '../support/suite.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { Agent, get as httpGet } from 'node:http';
import { startDashboardApp } from '../support/dashboard-app.js';

/** Node's active timers (ref'd or not): back to what they were once everything a test started is closed. */
const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

/**
 * Whatever close() is called in the middle of (start-up, a reconnection), it leaves no connection to the broker
 * behind: a socket left open keeps a user's process alive after shutdown. Every client connects through a TcpProxy,
 * whose count of client connections says what is still open; a settle window then shows none is opened later.
 */
describe('close() leaves no connection behind', () => {
  const suite = useSuite('e2e.close-leaks');
  let proxy: TcpProxy;

  beforeEach(async () => {
    proxy = await new TcpProxy().start();
  });
  afterEach(async () => {
    await proxy.stop();
  });

  async function expectNoConnection(what: string): Promise<void> {
    await waitFor(() => proxy.clients === 0, `no connection left after ${what} (open: ${proxy.clients})`, 5_000);
    await settleWindow(300); // none is opened later
    expect({ what, open: proxy.clients }).toEqual({ what, open: 0 });
  }

  it('a RetryServer closed while it is still starting (listen not yet done)', async () => {
    // Every 3 ms of the start, so that close() meets each of its steps (connect, declare, record, consume): a channel
    // close under way when the connection closed never settled in amqplib, and listen() never called back.
    const unsettled: number[] = [];
    for (let afterMs = 0; afterMs <= 90; afterMs += 3) {
      const server = new RetryServer({ url: proxy.url, queue: suite.queue, delayedDelivery: false, shutdownTimeout: '1s' });
      let calledBack = false;
      const listened = new Promise<void>(
        (resolve) =>
          void server.listen(() => {
            calledBack = true;
            resolve();
          }),
      );
      if (afterMs > 0) await settleWindow(afterMs);
      await server.close();
      await Promise.race([listened, settleWindow(3_000)]);
      if (!calledBack) unsettled.push(afterMs);
      await waitFor(() => proxy.clients === 0, `no connection left after RetryServer.close() ${afterMs} ms after listen()`, 5_000);
    }
    expect({ unsettled }).toEqual({ unsettled: [] });
    await expectNoConnection('the last RetryServer.close()');
  });

  it("a RetryServer on the module's engine closed while it attaches leaves no consumer of its queue", async () => {
    const engine = RetryEngine.create({ ...TEST_OPTIONS, url: proxy.url }, quiet);
    try {
      await engine.connectPublisher();
      for (const afterMs of [0, 5, 20]) {
        const server = new RetryServer({ engine, queue: suite.queue, shutdownTimeout: '1s' });
        const listened = new Promise<unknown>((resolve) => void server.listen(resolve));
        if (afterMs > 0) await settleWindow(afterMs);
        await server.close();
        await listened;
        await settleWindow(300); // an attach that close() did not see would be consuming by now
        expect({ afterMs, consumers: (await suite.broker.consumers(suite.queue)) ?? 0 }).toEqual({ afterMs, consumers: 0 });
      }
    } finally {
      await engine.close();
    }
    await expectNoConnection('RetryEngine.close()');
  });

  it('a RetryEngine closed while start() declares the delay ladder and starts its forwarder', async () => {
    for (const afterMs of [0, 5, 10, 20, 40, 80]) {
      const prefix = uniqueName('e2e.close-leaks.delay');
      const engine = RetryEngine.create({ ...TEST_OPTIONS, url: proxy.url, delayedDelivery: { prefix } }, quiet);
      const started = engine.start([]).catch(() => undefined);
      if (afterMs > 0) await settleWindow(afterMs);
      await engine.close();
      await started;
      await expectNoConnection(`RetryEngine.close() ${afterMs} ms after start()`);
      await suite.broker.deleteDelayLadder(prefix);
    }
  });

  it('an application closed while its init() is still starting the module', async () => {
    for (const afterMs of [0, 5, 10, 20, 40, 80]) {
      const Handler = handlerFor({ queue: suite.queue }, () => undefined);
      const app = await createApp([Handler], { ...TEST_OPTIONS, url: proxy.url });
      const initialised = app.init().catch(() => undefined);
      if (afterMs > 0) await settleWindow(afterMs);
      await app.close();
      await initialised;
      await app.close().catch(() => undefined);
      await expectNoConnection(`app.close() ${afterMs} ms after init()`);
    }
  });

  it("a partitioned handler's application closed while init() starts it: no connection, no heartbeat timer left", async () => {
    await requireHashExchange();
    try {
      const partitions = { count: 2, key: { header: 'x-key' }, heartbeat: '200ms' };
      const options = { ...TEST_OPTIONS, url: proxy.url, shutdownTimeout: '1s' };
      // How long a whole init() takes here: close() is then tried at points through it, the last ones densely, where
      // the partitions' members channel, announcement and heartbeat start.
      const timed = await createApp([handlerFor({ queue: suite.queue, partitions }, () => undefined)], options);
      const startedAt = Date.now();
      await timed.init();
      const initMs = Date.now() - startedAt;
      await timed.close();
      const points = [0, 10, 20, 40, ...Array.from({ length: 25 }, (_, i) => Math.round(initMs * (0.5 + i * 0.025)))];
      for (const afterMs of points) {
        const before = timers();
        const Handler = handlerFor({ queue: suite.queue, partitions }, () => undefined);
        const app = await createApp([Handler], options);
        const initialised = app.init().catch(() => undefined);
        if (afterMs > 0) await settleWindow(afterMs);
        await app.close();
        await initialised;
        await expectNoConnection(`app.close() ${afterMs} ms after init()`);
        await waitFor(() => timers() <= before, `the timers back to ${before} after app.close() ${afterMs} ms after init() (now ${timers()})`, 3_000);
      }
    } finally {
      await deletePartitionedTopology(suite.broker, suite.queue, 2);
    }
  });

  it('a standalone RetryClient closed while connect() opens its connections', async () => {
    for (const afterMs of [0, 5, 10, 20, 40, 80]) {
      const prefix = uniqueName('e2e.close-leaks.delay');
      const client = new RetryClient({ url: proxy.url, queue: suite.queue, delayedDelivery: { prefix } });
      const connected = client.connect().catch(() => undefined);
      if (afterMs > 0) await settleWindow(afterMs);
      await client.close();
      await connected;
      await expectNoConnection(`RetryClient.close() ${afterMs} ms after connect()`);
      await suite.broker.deleteDelayLadder(prefix);
    }
  });

  it('a ParkedMessages closed while it connects, while it waits to reconnect, and while it reconnects', async () => {
    const settings = { url: proxy.url, wholeVhost: true };
    // queues() reads the registry, then each queue's depths: close() at points through it, each a few ms apart.
    for (let afterMs = 0; afterMs <= 40; afterMs += 4) {
      const parked = new ParkedMessages(settings);
      const reading = parked.queues().then(
        () => 'answered',
        (error: unknown) => (error instanceof NotConnectedError ? 'ended by close' : `failed: ${String(error)}`),
      ); // opens the connection
      if (afterMs > 0) await settleWindow(afterMs);
      await parked.close();
      // The call settles at once, whatever it was waiting for (a call that never settled would be a page request that
      // Nest's HTTP server waits for at app.close(), hanging the shutdown), and opens no connection again.
      const outcome = await Promise.race([reading, settleWindow(1_000).then(() => 'still waiting 1 s after close()')]);
      expect([`${afterMs} ms: answered`, `${afterMs} ms: ended by close`]).toContain(`${afterMs} ms: ${outcome}`);
      await expectNoConnection(`ParkedMessages.close() ${afterMs} ms after its first call`);
    }
    for (const restoreFirst of [false, true]) {
      const parked = await ParkedMessages.connect(settings);
      await proxy.cut();
      if (restoreFirst) await proxy.restore();
      await settleWindow(120);
      await parked.close();
      if (!restoreFirst) await proxy.restore();
      await expectNoConnection(`ParkedMessages.close() during a reconnection (proxy restored ${restoreFirst ? 'before' : 'after'})`);
    }
  });

  it("an HTTP application closed while its parked-messages page is being read (the page's requests during app.close())", async () => {
    const parked = new ParkedMessages({ url: proxy.url, wholeVhost: true }); // in place of the module's, through the proxy
    const started = await startDashboardApp([], { path: '/retry', allowUnauthenticated: true }, parked);
    let reading = true;
    const read = async () => {
      while (reading)
        await fetch(`${started.url}/retry/api/queues`).then(
          (response) => response.text(),
          () => undefined,
        );
    };
    const readers = [read(), read(), read(), read()];
    let closing: Promise<void> | undefined;
    try {
      await waitFor(() => proxy.clients > 0, 'the page reading through its connection');
      await settleWindow(50);
      closing = started.app.close(); // ParkedMessages closes in beforeApplicationShutdown, before the HTTP server stops
      await settleWindow(200); // the page's requests go on meanwhile
    } finally {
      reading = false; // the readers' keep-alive connections would hold the HTTP server's close
      await Promise.all(readers);
    }
    await closing;
    await expectNoConnection('app.close() while the page is read');
  });

  it('an HTTP application whose page is polled on a keep-alive connection closes at once: its answers then say Connection: close', async () => {
    // A browser with the page open asks every few seconds on one keep-alive connection, which then never falls idle for
    // Node's keepAliveTimeout (5 s): the HTTP server's close() waited for it, and app.close() never returned (seen on
    // RabbitMQ 4.3 in CI, with Chromium). Every answer to a request made after the shutdown began must close its
    // connection; DashboardShutdown's unit test shows the header, this one that app.close() returns meanwhile.
    const parked = new ParkedMessages({ url: proxy.url, wholeVhost: true });
    const started = await startDashboardApp([], { path: '/retry', allowUnauthenticated: true }, parked);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const answers: Array<{ sentAt: number; connection: string }> = [];
    let polling = true;
    let closingAt = Infinity;
    const answer = () =>
      new Promise<void>((resolve) => {
        const sentAt = Date.now();
        const request = httpGet(`${started.url}/retry/api/queues`, { agent }, (response) => {
          response.resume();
          response.on('end', () => resolve(void answers.push({ sentAt, connection: response.headers.connection ?? 'keep-alive' })));
        });
        request.on('error', () => resolve(void answers.push({ sentAt, connection: 'refused' })));
      });
    const poll = (async () => {
      while (polling) {
        await answer();
        await settleWindow(50);
      }
    })();
    let closing: Promise<void> | undefined;
    try {
      await waitFor(() => answers.length >= 2, 'the page polled twice');
      closingAt = Date.now();
      closing = started.app.close();
      const closed = await Promise.race([closing.then(() => true), settleWindow(8_000).then(() => false)]);
      const closeMs = Date.now() - closingAt;
      expect({ closed, closeMs: closeMs < 5_000 ? 'under 5 s' : closeMs }).toEqual({ closed: true, closeMs: 'under 5 s' });
    } finally {
      polling = false;
      await poll;
      agent.destroy();
      await closing;
    }
    expect(answers.filter((a) => a.sentAt < closingAt).map((a) => a.connection)).toContain('keep-alive');
    const keptAliveAfter = answers.filter((a) => a.sentAt >= closingAt && a.connection === 'keep-alive');
    expect(keptAliveAfter).toEqual([]);
    await expectNoConnection('app.close() while the page was polled');
  });

  it('an HTTP application closed while a page request waits for a broker that does not answer: the request ends, close() does not wait', async () => {
    // A broker that accepts the TCP connection and never answers: the page's request waits for its connect (10 s).
    const held = new Set<Socket>();
    const silent = createServer((socket) => void held.add(socket.on('error', () => undefined)));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      const parked = new ParkedMessages({ url: `amqp://guest:guest@127.0.0.1:${port}`, wholeVhost: true });
      const started = await startDashboardApp([], { path: '/retry', allowUnauthenticated: true }, parked);
      const request = fetch(`${started.url}/retry/api/queues`).then((response) => response.status);
      await waitFor(() => held.size > 0, 'the page request connecting to the silent broker');
      const closingAt = Date.now();
      await started.app.close();
      const closeMs = Date.now() - closingAt;
      const status = await request;
      // Under 5 s: well before the connect timeout (10 s) the request would wait for were close() not to end it.
      expect({ closeMs: closeMs < 5_000 ? 'under 5 s' : closeMs, failed: status >= 500 }).toEqual({ closeMs: 'under 5 s', failed: true });
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('an application closed while it waits to reconnect, and while it reconnects', async () => {
    for (const restoreFirst of [false, true]) {
      const Handler = handlerFor({ queue: suite.queue }, () => undefined);
      const app = await createApp([Handler], { ...TEST_OPTIONS, url: proxy.url, reconnect: { initialDelay: '100ms', maxDelay: '200ms' } });
      await app.init();
      await proxy.cut();
      if (restoreFirst) await proxy.restore(); // the reconnection may be under way when close() comes
      await settleWindow(120);
      await app.close();
      if (!restoreFirst) await proxy.restore();
      await expectNoConnection(`app.close() during a reconnection (proxy restored ${restoreFirst ? 'before' : 'after'})`);
    }
  });
});
