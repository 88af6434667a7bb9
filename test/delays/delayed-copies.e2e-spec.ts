import { PublishError, RetryEngine, RetryPublisher } from 'nestjs-amqp-retry';
import { planDelayTopology, delayLevels } from '../../libs/amqp-retry/src/core/delivery/delay.plan.js';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { settleWindow, useSuite } from '../support/suite.js';

/**
 * Copies waiting in the delay ladder must be persistent whatever the publish said (a broker restart
 * must not lose them), and a due message that no queue takes must be parked, as an immediate publish would reject.
 */
describe('delayed copies', () => {
  const suite = useSuite('e2e.copies');
  let prefix: string;
  let exchange: string;

  beforeEach(async () => {
    prefix = suite.ladder();
    exchange = uniqueName('e2e.copies.x');
    suite.extraExchanges.push(exchange);
    await suite.broker.channel.assertExchange(exchange, 'direct', { durable: true });
    suite.app = await startApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix } });
  });

  it('keeps the waiting copy persistent when published with persistent: false', async () => {
    await suite.app!.get(RetryPublisher).publish(exchange, 'k', { id: 1 }, { delay: 60_000, persistent: false });
    const [top] = delayLevels(60_000);
    const level = planDelayTopology(prefix).queues.find((q) => q.arguments['x-message-ttl'] === top.ttlMs)!.name;
    const waiting = await waitFor(() => suite.broker.channel.get(level, { noAck: true }), 'the copy in its ladder level');
    expect(waiting.properties.deliveryMode).toBe(2);
  });

  it('delivers a delayed publish with CC and BCC to the same three queues as an immediate one, and shows no BCC', async () => {
    const queues = ['a', 'b', 'c'].map((key) => ({ key, name: uniqueName(`e2e.copies.${key}`) }));
    for (const { key, name } of queues) {
      suite.extraQueues.push(name);
      await suite.broker.declareQueue(name, { exchange, key });
    }
    // As properties (RetryEngine.publish, RetryClient's RmqRecord options) and as headers (RetryPublisher).
    const engine = suite.app!.get(RetryEngine);
    const publish = (id: string, delay: number) => engine.publish(exchange, 'a', Buffer.from(JSON.stringify({ id })), { CC: ['b'], BCC: 'c' }, delay);
    await publish('now', 0);
    await publish('later', 200);
    const headers = { CC: ['b'], BCC: ['c'] };
    await suite.app!.get(RetryPublisher).publish(exchange, 'a', { id: 'later, in headers' }, { delay: 300, headers });
    for (const { name } of queues) {
      const got = await suite.broker.take(name, 3);
      expect(got.map((m) => JSON.parse(m.content.toString()).id)).toEqual(['now', 'later', 'later, in headers']);
      const [now, ...later] = got.map((m) => m.properties.headers ?? {});
      for (const delayed of later) {
        expect(delayed.CC).toEqual(now.CC);
        expect(delayed.BCC).toBeUndefined();
        expect(delayed['x-delay-cc']).toBeUndefined();
        expect(delayed['x-delay-bcc']).toBeUndefined();
      }
    }
  });

  it('routes a CC key only at the target: one copy per queue, none before the delay, whatever digits the key holds', async () => {
    // 'a.b.c.d.e.f.g.h.0' has a 0 where position 2 reads its digit: routed in the ladder, it would pass the 320 ms level
    // through its exchange-to-exchange binding, taking the main key with it, and both queues would get the message twice.
    const ccKey = 'a.b.c.d.e.f.g.h.0';
    const [main, copied] = ['main', 'cc'].map((which) => uniqueName(`e2e.copies.${which}`));
    suite.extraQueues.push(main, copied);
    await suite.broker.declareQueue(main, { exchange, key: 'a' });
    await suite.broker.declareQueue(copied, { exchange, key: ccKey });
    const content = Buffer.from(JSON.stringify({ id: 'property' }));
    await suite.app!.get(RetryEngine).publish(exchange, 'a', content, { CC: [ccKey] }, 320);
    await suite.app!.get(RetryPublisher).publish(exchange, 'a', { id: 'header' }, { delay: 320, headers: { CC: [ccKey] } });
    await settleWindow(200);
    expect([await suite.broker.count(main), await suite.broker.count(copied)]).toEqual([0, 0]);
    await settleWindow(700); // well past the delay and a forwarder's hop
    for (const queue of [main, copied]) {
      const got = await suite.broker.drain(queue);
      expect(got.map((m) => JSON.parse(m.content.toString()).id)).toEqual(['property', 'header']);
      for (const { properties } of got) expect(properties.headers?.CC).toEqual([ccKey]);
    }
  });

  it('routes the CC header of a due message put in the ladder with one (an earlier version), at its target only', async () => {
    const [main, copied] = ['main', 'cc'].map((which) => uniqueName(`e2e.copies.${which}`));
    suite.extraQueues.push(main, copied);
    await suite.broker.declareQueue(main, { exchange, key: 'a' });
    await suite.broker.declareQueue(copied, { exchange, key: 'orders.shard.0' });
    const headers = { 'x-delay-target-exchange': exchange, 'x-delay-target-routing-key': 'a', CC: ['orders.shard.0'] };
    suite.broker.channel.publish(`${prefix}.ready`, '', Buffer.from('{"id":"old"}'), { headers, persistent: true });
    for (const queue of [main, copied]) expect((await suite.broker.take(queue, 1)).map((m) => m.content.toString())).toEqual(['{"id":"old"}']);
    await settleWindow(200);
    expect([await suite.broker.count(main), await suite.broker.count(copied)]).toEqual([0, 0]);
  });

  it('rejects a delayed publish to a missing exchange, or to a missing queue by name, as an immediate one rejects', async () => {
    const publisher = suite.app!.get(RetryPublisher);
    const missing = uniqueName('e2e.copies.missing');
    await expect(publisher.publish(missing, 'k', { id: 3 }, { delay: 100 })).rejects.toThrow(PublishError);
    await expect(publisher.publish(missing, 'k', { id: 3 }, { delay: 100 })).rejects.toThrow(/no exchange/);
    await expect(publisher.publish('', missing, { id: 4 }, { delay: 100 })).rejects.toThrow(PublishError);
    // Nothing went into the ladder: nothing is parked once due.
    await settleWindow(400);
    expect(await suite.broker.count(`${prefix}.error`)).toBe(0);
  });

  it('rejects each of several delayed publishes to missing targets made at once, and takes the one beside them', async () => {
    // One 404 closes the channel the checks share: a check beside it must not end unanswered and let its publish in.
    const publisher = suite.app!.get(RetryPublisher);
    const [ex1, ex2, q1, q2] = ['ex1', 'ex2', 'q1', 'q2'].map((name) => uniqueName(`e2e.copies.gone-${name}`));
    const results = await Promise.allSettled([
      publisher.publish(ex1, 'k', { id: 1 }, { delay: 100 }),
      publisher.publish('', q1, { id: 2 }, { delay: 100 }),
      publisher.publish('', q2, { id: 3 }, { delay: 100 }),
      publisher.publish(exchange, 'k', { id: 4 }, { delay: 100 }),
      publisher.publish(ex2, 'k', { id: 5 }, { delay: 100 }),
    ]);
    expect(results.map((r) => (r.status === 'rejected' ? (r.reason as PublishError).brokerCode : 'ok'))).toEqual([404, 404, 404, 'ok', 404]);
    await settleWindow(400);
    expect(await suite.broker.count(`${prefix}.error`)).toBe(1); // the one for "exchange", which no queue is bound to take
  });

  it('refuses a delayed publish whose exchange, routing key or CC key is over 255 bytes, as amqplib refuses an immediate one', async () => {
    const publisher = suite.app!.get(RetryPublisher);
    await expect(publisher.publish('x'.repeat(300), 'k', { id: 1 }, { delay: 100 })).rejects.toThrow(
      /exchange name: 300 bytes of UTF-8.*at most 255/,
    );
    await expect(publisher.publish(exchange, 'k'.repeat(300), { id: 2 }, { delay: 100 })).rejects.toThrow(RangeError);
    await expect(publisher.publish(exchange, 'é'.repeat(200), { id: 3 }, { delay: 100 })).rejects.toThrow(/routing key: 400 bytes/);
    await expect(publisher.publish(exchange, 'k', { id: 4 }, { delay: 100, headers: { CC: ['c'.repeat(256)] } })).rejects.toThrow(/CC key/);
    await expect(publisher.publish(exchange, 'é'.repeat(200), { id: 5 })).rejects.toThrow(RangeError);
    await settleWindow(400);
    expect(await suite.broker.count(`${prefix}.error`)).toBe(0); // nothing went into the ladder
  });

  it('parks a due message for an internal exchange, or with a routing key amqplib cannot send, at once (not given back)', async () => {
    const internal = uniqueName('e2e.copies.internal');
    suite.extraExchanges.push(internal);
    await suite.broker.channel.assertExchange(internal, 'direct', { durable: true, internal: true });
    await suite.app!.get(RetryPublisher).publish(internal, 'k', { id: 'internal' }, { delay: 100 }); // exists: taken
    // Put in the ladder by another client: the routing key waits in a header, where any length passes.
    const headers = { 'x-delay-target-exchange': exchange, 'x-delay-target-routing-key': 'k'.repeat(300) };
    suite.broker.channel.publish(`${prefix}.ready`, '', Buffer.from('{"id":"long key"}'), { headers, persistent: true });
    const parked = await suite.broker.take(`${prefix}.error`, 2, 3_000);
    const byId: Record<string, Record<string, unknown>> = Object.fromEntries(
      parked.map((m) => [JSON.parse(m.content.toString()).id, m.properties.headers ?? {}]),
    );
    expect(byId.internal).toMatchObject({ 'x-parked-reason': 'malformed', 'x-original-exchange': internal });
    expect(String(byId.internal['x-exception-message'])).toMatch(/cannot publish to internal exchange/);
    expect(byId['long key']).toMatchObject({ 'x-parked-reason': 'malformed' });
    expect(String(byId['long key']['x-exception-message'])).toMatch(/routingKey.*255/);
    for (const h of Object.values(byId)) expect(h['x-delay-given-back']).toBeUndefined();
  });

  it('parks a due message that no queue takes (undeliverable), instead of dropping it', async () => {
    await suite.app!.get(RetryPublisher).publish(exchange, 'no-binding', { id: 2 }, { delay: 100 });
    const [parked] = await suite.broker.take(`${prefix}.error`, 1);
    expect(JSON.parse(parked.content.toString())).toEqual({ id: 2 });
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'undeliverable', 'x-original-exchange': exchange });
    expect(String(parked.properties.headers?.['x-exception-message'])).toMatch(/unroutable/);
  });
});
