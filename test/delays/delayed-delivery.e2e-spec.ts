import type { ConsumeMessage } from 'amqplib';
import { planDelayTopology, RetryEngine, RetryPublisher } from 'nestjs-amqp-retry';
import { resolveModuleConfig } from '../../libs/amqp-retry/src/core/config/module.config.js';
import { createApp, startApp, TEST_OPTIONS } from '../support/app.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { ctl } from '../support/broker-control.js';
import { TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

/** A message as a plain consumer of a target queue received it, with when. */
interface Arrival {
  queue: string;
  at: number;
  body: unknown;
  message: ConsumeMessage;
}

describe('delayed delivery through the TTL ladder', () => {
  const suite = useSuite('e2e.delay');
  let broker: TestBroker;
  let prefix: string;
  let exchange: string;
  const arrivals: Arrival[] = [];

  /** Declares a queue bound to the test exchange and records every message it receives. */
  async function listen(key: string, args?: Record<string, unknown>): Promise<string> {
    const queue = uniqueName('e2e.delay.target');
    suite.extraQueues.push(queue);
    await broker.channel.assertQueue(queue, { durable: true });
    await broker.channel.bindQueue(queue, exchange, key, args);
    await broker.channel.consume(queue, (message) => {
      if (!message) return;
      arrivals.push({ queue, at: Date.now(), body: JSON.parse(message.content.toString()), message });
      broker.channel.ack(message);
    });
    return queue;
  }

  const start = () => startApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix } });

  beforeEach(() => {
    broker = suite.broker;
    prefix = suite.ladder();
    exchange = uniqueName('e2e.delay.x');
    suite.extraExchanges.push(exchange);
    arrivals.length = 0;
  });

  it('delivers to every queue a topic exchange routes to, on time, with body, properties and headers unchanged', async () => {
    await broker.channel.assertExchange(exchange, 'topic', { durable: true });
    const [a, b] = [await listen('order.*'), await listen('#')];
    await listen('invoice.*'); // routes elsewhere: must get nothing
    suite.app = await start();
    const sent = Date.now();
    await suite.app.get(RetryPublisher).publish(exchange, 'order.created', { id: 1 }, { delay: 700, messageId: 'm-1', headers: { tenant: 'acme' } });

    await waitFor(() => arrivals.length === 2, 'both copies');
    await new Promise((resolve) => setTimeout(resolve, 100)); // a third copy would show up by now
    expect(arrivals.map((r) => r.queue).sort()).toEqual([a, b].sort());
    for (const { at, body, message } of arrivals) {
      expect(at - sent).toBeGreaterThanOrEqual(700);
      expect(at - sent).toBeLessThan(700 + 250);
      expect(body).toEqual({ id: 1 });
      expect(message.fields.exchange).toBe(exchange);
      expect(message.fields.routingKey).toBe('order.created');
      expect(message.properties).toMatchObject({ messageId: 'm-1', contentType: 'application/json', deliveryMode: 2 });
      expect(message.properties.headers).toMatchObject({
        tenant: 'acme',
        'x-delay-ms': 700,
        'x-delay-target-exchange': exchange,
        'x-delay-target-routing-key': 'order.created',
      });
      expect(message.properties.headers?.['x-death']).toBeUndefined(); // the ladder's history is not passed on
    }
  });

  it.each([
    ['direct', 'k', undefined],
    ['fanout', '', undefined],
    ['headers', '', { 'x-match': 'all', kind: 'order' }],
  ] as const)('delivers through a %s exchange as it would route the message then', async (type, key, args) => {
    await broker.channel.assertExchange(exchange, type, { durable: true });
    const queue = await listen(key, args);
    suite.app = await start();
    const publisher = suite.app.get(RetryPublisher);
    await publisher.publish(exchange, 'k', { id: 2 }, { delay: 150, headers: { kind: 'order' } });
    if (type === 'headers') await publisher.publish(exchange, 'k', { id: 3 }, { delay: 150, headers: { kind: 'invoice' } });

    await waitFor(() => arrivals.length === 1, 'the delayed message');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(arrivals.map((r) => [r.queue, r.body])).toEqual([[queue, { id: 2 }]]);
  });

  it('delivers mixed delays in delay order: 200 ms published after 2 s arrives first', async () => {
    await broker.channel.assertExchange(exchange, 'direct', { durable: true });
    await listen('k');
    suite.app = await start();
    const publisher = suite.app.get(RetryPublisher);
    const sent = Date.now();
    await publisher.publish(exchange, 'k', { delay: '2s' }, { delay: '2s' });
    await publisher.publish(exchange, 'k', { delay: '200ms' }, { delay: '200ms' });

    await waitFor(() => arrivals.length === 2, 'both messages', 5_000);
    expect(arrivals.map((r) => r.body)).toEqual([{ delay: '200ms' }, { delay: '2s' }]);
    expect(arrivals[0].at - sent).toBeGreaterThanOrEqual(200);
    expect(arrivals[0].at - sent).toBeLessThan(450);
    expect(arrivals[1].at - sent).toBeGreaterThanOrEqual(2_000);
    expect(arrivals[1].at - sent).toBeLessThan(2_300);
  });

  it('runs a ladder of quorum queues when asked: on time, never early, nothing in a classic ladder', async () => {
    await broker.channel.assertExchange(exchange, 'direct', { durable: true });
    await listen('k');
    suite.app = await startApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix, queueType: 'quorum' } });
    const publisher = suite.app.get(RetryPublisher);
    // 1 to 4 nonzero base-8 digits: 1, 2, 3 and 4 hops through the ladder before the forwarder.
    const delays = [150, 700, 1_234, 2_777];
    const sent = new Map<number, number>();
    for (const delay of delays) {
      sent.set(delay, Date.now());
      await publisher.publish(exchange, 'k', { delay }, { delay });
    }

    await waitFor(() => arrivals.length === delays.length, 'every delayed message', 8_000);
    for (const { at, body } of arrivals) {
      const { delay } = body as { delay: number };
      const late = at - (sent.get(delay) ?? 0) - delay;
      expect(late).toBeGreaterThanOrEqual(0);
      expect(late).toBeLessThan(400);
    }
    const quorum = planDelayTopology(prefix, 'quorum');
    expect(quorum.readyQueue).toBe(`${prefix}.quorum.ready`);
    for (const name of [quorum.readyQueue, quorum.errorQueue, quorum.queues[5].name]) expect(await broker.exists(name)).toBe(true);
    expect(await broker.exists(planDelayTopology(prefix).readyQueue)).toBe(false);
    const types = new Map(
      (await ctl('list_queues', 'name', 'type', '--quiet', '--no-table-headers'))
        .split('\n')
        .map((line) => line.trim().split(/\s+/) as [string, string]),
    );
    expect(quorum.queues.map(({ name }) => types.get(name))).toEqual(quorum.queues.map(() => 'quorum'));
  });

  it('forwards what waits in a classic ladder after the app moves to a quorum ladder, until that ladder is deleted', async () => {
    await broker.channel.assertExchange(exchange, 'direct', { durable: true });
    await listen('k');
    suite.app = await start(); // the classic ladder
    const sent = Date.now();
    await suite.app.get(RetryPublisher).publish(exchange, 'k', { id: 'old' }, { delay: 1_200 });
    await suite.app.close();

    const logger = new RecordingLogger();
    suite.app = await createApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix, queueType: 'quorum' } });
    suite.app.useLogger(logger);
    await suite.app.init();
    expect(logger.count(/Found a classic delay ladder/)).toBe(1);
    await waitFor(() => arrivals.length === 1, 'the message from the classic ladder', 5_000);
    expect(arrivals[0].body).toEqual({ id: 'old' });
    expect(arrivals[0].at - sent).toBeGreaterThanOrEqual(1_200);

    // The classic ladder is deleted: its forwarder stops, once, and the quorum ladder goes on.
    const classic = planDelayTopology(prefix);
    for (const { name } of classic.queues) await broker.channel.deleteQueue(name);
    await waitFor(() => logger.count(/no longer forwarding from it/) === 1, 'the old forwarder to stop', 10_000);
    await suite.app.get(RetryPublisher).publish(exchange, 'k', { id: 'new' }, { delay: 150 });
    await waitFor(() => arrivals.length === 2, 'the message through the quorum ladder');
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // an old forwarder trying to resume would log again by now
    expect(logger.count(/no longer forwarding from it/)).toBe(1);
    expect(await broker.exists(classic.readyQueue)).toBe(false); // nothing declared it again
  });

  it('starts even when the old ladder it found is deleted before it consumes', async () => {
    suite.app = await start(); // the classic ladder
    await suite.app.close();
    suite.app = undefined;
    const logger = new RecordingLogger();
    const engine = RetryEngine.fromConfig(resolveModuleConfig({ ...TEST_OPTIONS, delayedDelivery: { prefix, queueType: 'quorum' } }), logger);
    try {
      await engine.prepare([]); // finds the classic ladder
      expect(logger.count(/Found a classic delay ladder/)).toBe(1);
      for (const { name } of planDelayTopology(prefix).queues) await broker.channel.deleteQueue(name);
      await engine.consume(); // its forwarder cannot consume any more: a warning, not a failed start
      expect(engine.isConsuming).toBe(true);
      await waitFor(() => logger.count(/no longer forwarding from it/) === 1, 'the old forwarder to stop', 10_000);
    } finally {
      await engine.close();
    }
  });

  it('keeps a delayed message in the broker while the app is closed, and delivers it once the app runs again', async () => {
    await broker.channel.assertExchange(exchange, 'direct', { durable: true });
    await listen('k');
    suite.app = await start();
    const sent = Date.now();
    await suite.app.get(RetryPublisher).publish(exchange, 'k', { id: 4 }, { delay: 1_000 });
    await suite.app.close();
    suite.app = undefined;
    await new Promise((resolve) => setTimeout(resolve, 1_300)); // due while no forwarder runs
    expect(arrivals).toHaveLength(0);

    suite.app = await start();
    await waitFor(() => arrivals.length === 1, 'the message after the restart');
    expect(arrivals[0].body).toEqual({ id: 4 });
    expect(arrivals[0].at - sent).toBeGreaterThanOrEqual(1_300);
  });

  it('publishes a delay of 0 at once, without the ladder', async () => {
    await broker.channel.assertExchange(exchange, 'direct', { durable: true });
    await listen('k');
    suite.app = await start();
    await suite.app.get(RetryPublisher).publish(exchange, 'k', { id: 5 }, { delay: 0 });
    await waitFor(() => arrivals.length === 1, 'the message', 1_000);
    expect(arrivals[0].message.properties.headers?.['x-delay-ms']).toBeUndefined();
  });

  it('does not hold a 100 ms message behind a thousand 1-hour ones', async () => {
    await broker.channel.assertExchange(exchange, 'direct', { durable: true });
    await listen('k');
    suite.app = await start();
    const publisher = suite.app.get(RetryPublisher);
    await Promise.all(Array.from({ length: 1_000 }, (_, id) => publisher.publish(exchange, 'k', { id }, { delay: '1h' })));
    const sent = Date.now();
    await publisher.publish(exchange, 'k', { id: 'soon' }, { delay: 100 });
    await waitFor(() => arrivals.length === 1, 'the short delay', 2_000);
    expect(arrivals[0].body).toEqual({ id: 'soon' });
    expect(arrivals[0].at - sent).toBeGreaterThanOrEqual(100);
    expect(arrivals[0].at - sent).toBeLessThan(300);
  });

  it.each([
    [-1, /^Invalid delay -1: use milliseconds/],
    [Number.NaN, /^Invalid delay NaN/],
    ['soon', /^Invalid delay "soon": use milliseconds \(1500\) or a duration such as/],
    ['60d', /^Invalid delay 5184000000 ms: a delay must be a finite number of milliseconds from 0 to 4294967295/],
  ])('rejects the delay %p with a RangeError and publishes nothing', async (delay, message) => {
    await broker.channel.assertExchange(exchange, 'direct', { durable: true });
    await listen('k');
    suite.app = await start();
    const publishing = suite.app.get(RetryPublisher).publish(exchange, 'k', { id: 6 }, { delay });
    await expect(publishing).rejects.toThrow(RangeError);
    await expect(publishing).rejects.toThrow(message);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(arrivals).toHaveLength(0);
  });

  it('parks a due message whose target exchange was deleted, and goes on forwarding', async () => {
    await broker.channel.assertExchange(exchange, 'direct', { durable: true });
    await listen('k');
    const doomed = uniqueName('e2e.delay.doomed');
    await broker.channel.assertExchange(doomed, 'direct', { durable: true });
    suite.app = await start();
    const publisher = suite.app.get(RetryPublisher);
    await publisher.publish(doomed, 'k', { id: 'lost?' }, { delay: 200 });
    await broker.channel.deleteExchange(doomed);
    await publisher.publish(exchange, 'k', { id: 'after' }, { delay: 300 });

    const [parked] = await broker.take(`${prefix}.error`, 1);
    expect(JSON.parse(parked.content.toString())).toEqual({ id: 'lost?' });
    expect(parked.properties.headers).toMatchObject({
      'x-parked-reason': 'undeliverable',
      'x-original-exchange': doomed,
      'x-original-routing-key': 'k',
    });
    expect(parked.properties.headers?.['x-exception-message']).toMatch(/NOT_FOUND - no exchange/);
    await waitFor(() => arrivals.length === 1, 'the next delayed message');
    expect(arrivals[0].body).toEqual({ id: 'after' });
  });

  it('rejects a delayed publish when delayed delivery is off, and publishes nothing', async () => {
    await broker.channel.assertExchange(exchange, 'direct', { durable: true });
    await listen('k');
    suite.app = await startApp([], TEST_OPTIONS);
    await expect(suite.app.get(RetryPublisher).publish(exchange, 'k', {}, { delay: 100 })).rejects.toThrow(/^Delayed delivery is off/);
    await suite.app.get(RetryPublisher).publish(exchange, 'k', { id: 7 }); // without a delay it works
    await waitFor(() => arrivals.length === 1, 'the immediate message');
  });
});

/** The restart happens on a node of the test's own (the version under test), never on the broker others use. */
describe('delayed delivery through a broker restart', () => {
  const suite = useSuite('e2e.delay.target', { privateNode: true, routed: true }); // its data goes with the node

  it('keeps a delayed message through a restart of the broker, and delivers it once due', async () => {
    const { exchange, queue } = suite;
    const node = suite.node!;
    const prefix = uniqueName('e2e.delay');
    suite.app = await startApp([], {
      ...TEST_OPTIONS,
      url: node.url,
      delayedDelivery: { prefix },
      reconnect: { initialDelay: '100ms', maxDelay: '500ms' },
    });
    const sent = Date.now();
    await suite.app.get(RetryPublisher).publish(exchange, 'k', { id: 8 }, { delay: '4s' });
    await node.restart();
    await suite.broker.close();
    const broker = (suite.broker = await TestBroker.connect(node.url)); // the old connection died with the broker

    await waitFor(async () => (await broker.count(queue)) === 1, 'the message after the broker restart', 15_000);
    expect(Date.now() - sent).toBeGreaterThanOrEqual(4_000);
    const [message] = await broker.drain(queue);
    expect(JSON.parse(message.content.toString())).toEqual({ id: 8 });
  });
});
