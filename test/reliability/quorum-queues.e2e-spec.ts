import { TopologyMismatchError } from 'nestjs-amqp-retry';
import { createApp, handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { TcpProxy } from '../support/tcp-proxy.js';

describe('quorum queues', () => {
  const suite = useSuite('e2e.quorum');

  it('retries through quorum tiers with attempts 1, 2, 3 and parks with every header', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, delays: [150, 300], queueType: 'quorum' }, (_, ctx) => {
      throw new Error(`declined ${ctx.attempt}`);
    });
    suite.app = await startApp([Handler]);
    await broker.publish('', queue, { id: 1 }, { messageId: 'q-1' });

    const [parked] = await broker.take(`${queue}.error`, 1);
    const calls = handlerOf(suite.app, Handler).calls;
    expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
    expect(calls[1].at - calls[0].at).toBeGreaterThanOrEqual(145);
    expect(calls[2].at - calls[1].at).toBeGreaterThanOrEqual(295);
    expect(parked.properties.messageId).toBe('q-1');
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-exception-message': 'declined 3', 'x-retry-attempts': 3 });
  });

  it('gives a message all 14 attempts, past the redelivery limit of 10 (4.0 keeps its count through the tiers)', async () => {
    // RabbitMQ 4.0.5 delivers each retry redelivered, x-delivery-count raised by every earlier rejection: not crashes.
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, delays: [20], maxAttempts: 14, queueType: 'quorum' }, (_, ctx) => {
      throw new Error(`declined ${ctx.attempt}`);
    });
    suite.app = await startApp([Handler]);
    await broker.publish('', queue, { id: 1 }, { messageId: 'q-14' });

    const [parked] = await broker.take(`${queue}.error`, 1);
    expect(handlerOf(suite.app, Handler).calls.map((c) => c.attempt)).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-exception-message': 'declined 14', 'x-retry-attempts': 14 });
  });

  it('hands a first delivery to the handler whatever delivery counts its publisher set (3.10 delivers them as sent)', async () => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, delays: [150], queueType: 'quorum' }, () => undefined);
    suite.app = await startApp([Handler]);
    await broker.publish('', queue, { id: 1 }, { headers: { 'x-delivery-count': 12, 'x-acquired-count': 12 } });

    const calls = handlerOf(suite.app, Handler).calls;
    await waitFor(async () => calls.length > 0 || ((await broker.count(`${queue}.error`)) ?? 0) > 0, 'a handler call or a park');
    expect({ calls: calls.map((c) => c.attempt), parked: await broker.count(`${queue}.error`) }).toEqual({ calls: [1], parked: 0 });
  });

  it('really declares quorum queues: the same queue as classic is refused with the clear error', async () => {
    const { queue } = suite;
    suite.app = await startApp([handlerFor({ queue, queueType: 'quorum' }, () => undefined)]);
    await suite.app.close();
    suite.app = await createApp([handlerFor({ queue }, () => undefined)]);
    const failure = await suite.app.init().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TopologyMismatchError);
    expect((failure as Error).message).toMatch(
      /\(inequivalent arg 'x-dead-letter-strategy' for queue '[^']+' in vhost '\/': received none but current is the value 'at-least-once' of type 'longstr'\)\./,
    );
    // The broker names the type only after x-dead-letter-strategy: the library finds it and names both.
    expect(failure).toMatchObject({ entity: queue, queueTypes: { configured: 'classic', found: 'quorum' } });
    expect((failure as Error).message).toContain(
      `The queue "${queue}" exists on the broker as a quorum queue, but it is configured as a classic queue`,
    );
  });

  it('parks a message whose handler never settles it (the connection dies every time), after 10 deliveries', async () => {
    const { broker, queue } = suite;
    const proxy = await new TcpProxy().start();
    try {
      const Handler = handlerFor({ queue, queueType: 'quorum' }, () => new Promise(() => undefined)); // hangs, as if crashing
      suite.app = await startApp([Handler], {
        ...TEST_OPTIONS,
        url: proxy.url,
        reconnect: { initialDelay: '20ms', maxDelay: '50ms' },
        shutdownTimeout: '50ms',
      });
      await broker.publish('', queue, { id: 'poison' });
      const calls = handlerOf(suite.app, Handler).calls;
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
      await suite.app?.close();
      suite.app = undefined;
      await proxy.stop();
    }
  });

  /**
   * A quorum queue counts every unsettled delivery when a connection dies. A poison message that kills the
   * connection each time must be parked alone; the messages in flight beside it must never reach the redelivery limit.
   */
  it('parks only the poison message; the 60 good ones in flight beside it are all handled', async () => {
    const proxy = await new TcpProxy().start();
    try {
      let crashes = 0;
      const Handler = handlerFor({ queue: suite.queue, queueType: 'quorum', prefetch: 20 }, async (payload) => {
        if ((payload as { id: string }).id === 'poison') {
          crashes++;
          await proxy.cut(); // as if the process died: every unsettled delivery of the connection is returned
          await proxy.restore();
          return new Promise(() => undefined);
        }
        await new Promise((resolve) => setTimeout(resolve, 30));
      });
      suite.app = await startApp([Handler], {
        ...TEST_OPTIONS,
        url: proxy.url,
        reconnect: { initialDelay: '20ms', maxDelay: '100ms' },
        shutdownTimeout: '50ms',
      });
      for (let id = 0; id < 30; id++) await suite.broker.publish('', suite.queue, { id: `good-${id}` });
      await suite.broker.publish('', suite.queue, { id: 'poison' });
      for (let id = 30; id < 60; id++) await suite.broker.publish('', suite.queue, { id: `good-${id}` });

      const [parked] = await suite.broker.take(`${suite.queue}.error`, 1, 60_000);
      expect(JSON.parse(parked.content.toString())).toEqual({ id: 'poison' });
      expect(parked.properties.headers?.['x-parked-reason']).toBe('redelivery-limit');
      const handled = () =>
        new Set(
          handlerOf(suite.app!, Handler)
            .calls.map((c) => (c.payload as { id: string }).id)
            .filter((id) => id !== 'poison'),
        );
      await waitFor(async () => handled().size === 60 && (await suite.broker.count(suite.queue)) === 0, 'every good message handled', 30_000);
      await new Promise((resolve) => setTimeout(resolve, 500)); // a settle window: nothing else is parked
      expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
      expect(crashes).toBe(10);
    } finally {
      await suite.app?.close();
      suite.app = undefined;
      await proxy.stop();
    }
  });
});
