import { PublishError, RetryPublisher, type RetryObserver } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, uniqueName } from '../support/broker.js';
import { ctl } from '../support/broker-control.js';
import { useSuite } from '../support/suite.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/** One failed publish must fail alone; its neighbours on the same channel resolve and are delivered. */
describe('a failed publish fails alone', () => {
  const suite = useSuite('e2e.isolate', { routed: true });

  const ids = (messages: { content: Buffer }[]) => new Set(messages.map((m) => (JSON.parse(m.content.toString()) as { n: number }).n));

  it('rejects only the publish to a missing exchange (404); the 300 beside it resolve and arrive', async () => {
    suite.app = await startApp([], TEST_OPTIONS);
    const publisher = suite.app.get(RetryPublisher);
    const results = await Promise.allSettled(
      Array.from({ length: 301 }, (_, n) =>
        n === 150 ? publisher.publish(uniqueName('missing'), 'k', { n }) : publisher.publish(suite.exchange, 'k', { n }),
      ),
    );
    const rejected = results.flatMap((r, n) => (r.status === 'rejected' ? [{ n, reason: r.reason as PublishError }] : []));
    expect(rejected.map((r) => r.n)).toEqual([150]);
    expect(rejected[0].reason).toBeInstanceOf(PublishError);
    expect(rejected[0].reason.brokerCode).toBe(404);
    const delivered = await suite.broker.take(suite.queue, 300);
    expect(ids(delivered).size).toBe(300); // at least once: a re-sent neighbour may arrive twice, none is missing
  });

  it('rejects only the publish to an exchange named amq.default (404); the 300 beside it to a queue by name arrive', async () => {
    // RabbitMQ names the default exchange amq.default in a 403, but no exchange has that name: the 404 is that publish's own.
    suite.app = await startApp([], TEST_OPTIONS);
    const publisher = suite.app.get(RetryPublisher);
    const results = await Promise.allSettled(
      Array.from({ length: 301 }, (_, n) =>
        n === 150 ? publisher.publish('amq.default', suite.queue, { n }) : publisher.publish('', suite.queue, { n }),
      ),
    );
    const rejected = results.flatMap((r, n) => (r.status === 'rejected' ? [{ n, reason: r.reason as PublishError }] : []));
    expect(rejected.map((r) => [r.n, r.reason.brokerCode])).toEqual([[150, 404]]);
    expect(ids(await suite.broker.take(suite.queue, 300)).size).toBe(300);
  });

  it('a link to the broker that stalls: the 300 large publishes beside a 404 resolve, and the connection stays up', async () => {
    // The stall fills the socket, so the publishes wait in amqplib's multiplexer when the broker's Close comes back.
    // Their re-sends open a channel while the closed one's frames (its CloseOk last) still wait there: without the
    // channel-number guard the new Open overtook that CloseOk and RabbitMQ closed the connection (504 "second
    // 'channel.open' seen"), failing all 300.
    const proxy = await new TcpProxy().start();
    const lost: string[] = [];
    const observer: RetryObserver = { connectionLost: (event) => lost.push(event.reason ?? '?') };
    suite.afterThis(() => proxy.stop());
    suite.app = await startApp([], { ...TEST_OPTIONS, url: proxy.url, observers: [observer] });
    const publisher = suite.app.get(RetryPublisher);
    await publisher.publish(suite.exchange, 'k', { n: -1 }); // the publishing channel is open
    proxy.stall();
    const pad = 'x'.repeat(64 * 1024);
    const settling = Promise.allSettled([
      publisher.publish(uniqueName('missing'), 'k', { n: 'doomed' }),
      ...Array.from({ length: 300 }, (_, n) => publisher.publish(suite.exchange, 'k', { n, pad })),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the stall lasts 300 ms: 19 MB wait in the client
    proxy.resume();
    const [doomed, ...results] = await settling;
    expect(doomed.status === 'rejected' && (doomed.reason as PublishError).brokerCode).toBe(404);
    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    const delivered = await suite.broker.take(suite.queue, 301);
    expect(ids(delivered).size).toBe(301);
    expect(lost).toEqual([]);
  });

  it('forwards every good delayed message when one due beside them targets a deleted exchange', async () => {
    const prefix = suite.ladder();
    const doomed = uniqueName('e2e.isolate.doomed');
    suite.extraExchanges.push(doomed);
    await suite.broker.channel.assertExchange(doomed, 'direct', { durable: true });
    suite.app = await startApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix } });
    const publisher = suite.app.get(RetryPublisher);
    await Promise.all(
      Array.from({ length: 200 }, (_, n) =>
        n === 100 ? publisher.publish(doomed, 'k', { n }, { delay: 300 }) : publisher.publish(suite.exchange, 'k', { n }, { delay: 300 }),
      ),
    );
    await suite.broker.channel.deleteExchange(doomed);
    const delivered = await suite.broker.take(suite.queue, 199);
    expect(ids(delivered).size).toBe(199);
    const [parked] = await suite.broker.take(`${prefix}.error`, 1);
    expect(parked.properties.headers?.['x-parked-reason']).toBe('undeliverable');
    expect(JSON.parse(parked.content.toString())).toEqual({ n: 100 });
    await new Promise((resolve) => setTimeout(resolve, 300)); // a settle window: nothing more is parked
    expect(await suite.broker.count(`${prefix}.error`)).toBe(0);
  });

  it('rejects only the publish a user may not write to (403); the others resolve', async () => {
    const forbidden = uniqueName('e2e.isolate.forbidden');
    suite.extraExchanges.push(forbidden);
    await suite.broker.channel.assertExchange(forbidden, 'direct', { durable: true });
    const user = await suite.user('/', ['.*', `^(?!${forbidden.replace(/\./g, '\\.')}$).*`, '.*']);
    const url = AMQP_URL.replace('guest:guest', `${user.name}:${user.password}`);
    suite.app = await startApp([], { ...TEST_OPTIONS, url });
    const publisher = suite.app.get(RetryPublisher);
    const results = await Promise.allSettled(
      Array.from({ length: 101 }, (_, n) => (n === 50 ? publisher.publish(forbidden, 'k', { n }) : publisher.publish(suite.exchange, 'k', { n }))),
    );
    const rejected = results.flatMap((r, n) => (r.status === 'rejected' ? [{ n, reason: r.reason as PublishError }] : []));
    expect(rejected.map((r) => r.n)).toEqual([50]);
    expect(rejected[0].reason.brokerCode).toBe(403);
    expect(ids(await suite.broker.take(suite.queue, 100)).size).toBe(100);
  });

  it('rejects only the publishes to an internal exchange (403); the 300 beside them resolve and arrive', async () => {
    const internal = uniqueName('e2e.isolate.internal');
    suite.extraExchanges.push(internal);
    await suite.broker.channel.assertExchange(internal, 'fanout', { durable: true, internal: true });
    suite.app = await startApp([], TEST_OPTIONS);
    const publisher = suite.app.get(RetryPublisher);
    const doomed = new Set([0, 50, 100, 150, 200, 250]);
    const results = await Promise.allSettled(
      Array.from({ length: 306 }, (_, n) =>
        doomed.has(n) ? publisher.publish(internal, 'k', { n }) : publisher.publish(suite.exchange, 'k', { n }),
      ),
    );
    const rejected = results.flatMap((r, n) => (r.status === 'rejected' ? [{ n, reason: r.reason as PublishError }] : []));
    expect(rejected.map((r) => r.n)).toEqual([...doomed]);
    expect(rejected.map((r) => r.reason.brokerCode)).toEqual([403, 403, 403, 403, 403, 403]);
    expect(ids(await suite.broker.take(suite.queue, 300)).size).toBe(300);
  });

  it('rejects only the publish to a routing key a topic permission refuses; the same exchange takes other keys', async () => {
    // Topic permissions apply to topic exchanges only.
    const topics = uniqueName('e2e.isolate.topics');
    suite.extraExchanges.push(topics);
    await suite.broker.channel.assertExchange(topics, 'topic', { durable: true });
    await suite.broker.channel.bindQueue(suite.queue, topics, '#');
    const user = await suite.user('/', ['.*', '.*', '.*']);
    await ctl('set_topic_permissions', '-p', '/', user.name, topics, '^(?!secret$).*', '.*');
    const url = AMQP_URL.replace('guest:guest', `${user.name}:${user.password}`);
    suite.app = await startApp([], { ...TEST_OPTIONS, url });
    const publisher = suite.app.get(RetryPublisher);
    const results = await Promise.allSettled(Array.from({ length: 101 }, (_, n) => publisher.publish(topics, n === 50 ? 'secret' : 'k', { n })));
    const rejected = results.flatMap((r, n) => (r.status === 'rejected' ? [{ n, reason: r.reason as PublishError }] : []));
    expect(rejected.map((r) => [r.n, r.reason.brokerCode])).toEqual([[50, 403]]);
    expect(ids(await suite.broker.take(suite.queue, 100)).size).toBe(100);
  });

  it('parks beside a handler whose own publishes fail: a park is never failed by a neighbour', async () => {
    const handled = suite.retryQueue();
    const Handler = handlerFor({ queue: handled, delays: ['50ms'], maxAttempts: 1 }, () => {
      throw new Error('always');
    });
    suite.app = await startApp([Handler], TEST_OPTIONS);
    const publisher = suite.app.get(RetryPublisher);
    const bad = Array.from({ length: 20 }, () => publisher.publish(uniqueName('missing'), 'k', {}).catch((e: unknown) => e));
    for (let n = 0; n < 20; n++) await suite.broker.publish('', handled, { n });
    expect((await Promise.all(bad)).every((e) => e instanceof PublishError && e.brokerCode === 404)).toBe(true);
    const parked = await suite.broker.take(`${handled}.error`, 20);
    expect(ids(parked).size).toBe(20);
    expect(handlerOf(suite.app, Handler).calls).toHaveLength(20);
  });

  it('refuses, before anything is sent, a replyTo of direct reply-to, a CC that is no array and a forged reply address; the 300 beside them arrive', async () => {
    // The broker closes the channel over the first two (406) and the whole connection over the third (541): each again
    // at every resend, taking the publishes beside them along each time.
    const prefix = suite.ladder();
    const lost: string[] = [];
    const observer: RetryObserver = { connectionLost: (event) => lost.push(event.reason ?? '?') };
    suite.app = await startApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix }, observers: [observer] });
    const publisher = suite.app.get(RetryPublisher);
    const forged = 'amq.rabbitmq.reply-to.g1h2AA==.forged';
    const doomed = new Map<number, () => Promise<unknown>>([
      [50, () => publisher.publish(suite.exchange, 'k', { n: 50 }, { replyTo: 'amq.rabbitmq.reply-to' })],
      [100, () => publisher.publish(suite.exchange, 'k', { n: 100 }, { headers: { CC: 'k' } })],
      [150, () => publisher.publish('', forged, { n: 150 })],
      [250, () => publisher.publish('', forged, { n: 250 }, { delay: 100 })],
    ]);
    const results = await Promise.allSettled(
      Array.from({ length: 304 }, (_, n) => doomed.get(n)?.() ?? publisher.publish(suite.exchange, 'k', { n })),
    );
    const rejected = results.flatMap((r, n) => (r.status === 'rejected' ? [{ n, reason: r.reason as Error }] : []));
    expect(rejected.map((r) => [r.n, r.reason.name])).toEqual([
      [50, 'RangeError'],
      [100, 'TypeError'],
      [150, 'RangeError'],
      [250, 'RangeError'],
    ]);
    expect(rejected[0].reason.message).toContain('Invalid replyTo "amq.rabbitmq.reply-to"');
    expect(rejected[1].reason.message).toContain('Invalid header CC "k"');
    expect(rejected[2].reason.message).toContain(`"${forged}" is no direct reply-to address RabbitMQ hands out`);
    expect(rejected[3].reason.message).toContain('reply without a delay');
    expect(ids(await suite.broker.take(suite.queue, 300)).size).toBe(300);
    expect(lost).toEqual([]);
  });
});
