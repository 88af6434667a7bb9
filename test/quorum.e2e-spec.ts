import type { INestApplicationContext } from '@nestjs/common';
import { TopologyMismatchError } from 'nestjs-amqp-retry';
import { createApp, handlerFor, handlerOf, startApp, TEST_OPTIONS } from './support/app.js';
import { TestBroker, uniqueName, waitFor } from './support/broker.js';
import { TcpProxy } from './support/tcp-proxy.js';

describe('quorum queues', () => {
  let broker: TestBroker;
  let queue: string;
  let app: INestApplicationContext | undefined;

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await broker.close();
  });
  beforeEach(() => {
    queue = uniqueName('e2e.quorum');
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await broker.deleteRetryTopology(queue);
  });

  it('retries through quorum tiers with attempts 1, 2, 3 and parks with every header', async () => {
    const Handler = handlerFor({ queue, delays: [150, 300], queueType: 'quorum' }, (_, ctx) => {
      throw new Error(`declined ${ctx.attempt}`);
    });
    app = await startApp([Handler]);
    await broker.publish('', queue, { id: 1 }, { messageId: 'q-1' });

    const [parked] = await broker.take(`${queue}.error`, 1);
    const calls = handlerOf(app, Handler).calls;
    expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
    expect(calls[1].at - calls[0].at).toBeGreaterThanOrEqual(145);
    expect(calls[2].at - calls[1].at).toBeGreaterThanOrEqual(295);
    expect(parked.properties.messageId).toBe('q-1');
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-exception-message': 'declined 3', 'x-retry-attempts': 3 });
  });

  it('really declares quorum queues: the same queue as classic is refused with the clear error', async () => {
    app = await startApp([handlerFor({ queue, queueType: 'quorum' }, () => undefined)]);
    await app.close();
    app = await createApp([handlerFor({ queue }, () => undefined)]);
    const failure = await app.init().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TopologyMismatchError);
    expect((failure as Error).message).toMatch(
      /\(inequivalent arg 'x-dead-letter-strategy' for queue '[^']+' in vhost '\/': received none but current is the value 'at-least-once' of type 'longstr'\)\./,
    );
  });

  it('parks a message whose handler never settles it (the connection dies every time), after 10 deliveries', async () => {
    const proxy = await new TcpProxy().start();
    try {
      const Handler = handlerFor({ queue, queueType: 'quorum' }, () => new Promise(() => undefined)); // hangs, as if crashing
      app = await startApp([Handler], {
        ...TEST_OPTIONS,
        url: proxy.url,
        reconnect: { initialDelay: '20ms', maxDelay: '50ms' },
        shutdownTimeout: '50ms',
      });
      await broker.publish('', queue, { id: 'poison' });
      const calls = handlerOf(app, Handler).calls;
      for (let delivery = 1; delivery <= 10; delivery++) {
        await waitFor(() => calls.length === delivery, `delivery ${delivery}`);
        await proxy.cut(); // the delivery is never settled: the quorum queue counts it
        await proxy.restore();
      }
      const [parked] = await broker.take(`${queue}.error`, 1);
      expect(calls).toHaveLength(10); // the eleventh delivery was parked without a call
      expect(calls.map((c) => c.redelivered)).toEqual([false, ...Array(9).fill(true)]);
      expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'redelivery-limit', 'x-retry-attempts': 10 });
      expect(await broker.count(queue)).toBe(0);
    } finally {
      await app?.close();
      app = undefined;
      await proxy.stop();
    }
  });
});
