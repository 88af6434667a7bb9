import { RmqRecordBuilder } from '@nestjs/microservices';
import type { ConsumeMessage } from 'amqplib';
import { lastValueFrom } from 'rxjs';
import { RetryEngine, RetryPublisher } from 'nestjs-amqp-retry';
import { RetryClient } from 'nestjs-amqp-retry/transport';
import { startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

/** A message as a plain consumer of the target queue received it, with when. */
interface Arrival {
  at: number;
  message: ConsumeMessage;
}

/**
 * A delayed message that carries a per-message `expiration` waits in the ladder for its whole delay (never early),
 * and its expiration applies from the moment it is delivered to its target.
 */
describe('delayed delivery of messages with an expiration', () => {
  const suite = useSuite('e2e.delay-exp.target');
  let prefix: string;
  const arrivals: Arrival[] = [];

  async function listen(): Promise<void> {
    await suite.broker.channel.consume(suite.queue, (message) => {
      if (!message) return;
      arrivals.push({ at: Date.now(), message });
      suite.broker.channel.ack(message);
    });
  }

  beforeEach(async () => {
    prefix = suite.ladder();
    arrivals.length = 0;
    await suite.broker.channel.assertQueue(suite.queue, { durable: true });
  });

  it('RetryPublisher: a 3 s delay with expiration 200 arrives after 3 s, still carrying expiration 200', async () => {
    await listen();
    suite.app = await startApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix } });
    const sent = Date.now();
    await suite.app.get(RetryPublisher).publish('', suite.queue, { id: 1 }, { delay: 3000, expiration: '200' });

    const [arrival] = await waitFor(() => arrivals.length === 1 && arrivals, 'the delayed message', 8_000);
    expect(arrival.at - sent).toBeGreaterThanOrEqual(3000);
    expect(arrival.at - sent).toBeLessThan(3000 + 1500); // on time too, with room for a loaded machine
    expect(arrival.message.properties.expiration).toBe('200');
    expect(JSON.parse(arrival.message.content.toString())).toEqual({ id: 1 });
    // The library's own carrier header is not passed on: the property is the one place the expiration lives.
    expect(arrival.message.properties.headers?.['x-delay-expiration']).toBeUndefined();
  });

  it('RetryEngine.publish: properties with a numeric expiration wait the whole delay too', async () => {
    await listen();
    suite.app = await startApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix } });
    const sent = Date.now();
    await suite.app.get(RetryEngine).publish('', suite.queue, Buffer.from('{"id":2}'), { expiration: 50, contentType: 'application/json' }, 1500);

    const [arrival] = await waitFor(() => arrivals.length === 1 && arrivals, 'the delayed message', 6_000);
    expect(arrival.at - sent).toBeGreaterThanOrEqual(1500);
    expect(arrival.message.properties.expiration).toBe('50');
  });

  it('RetryClient: a delayed emit of an RmqRecord with expiration 200 arrives after 3 s, still carrying it', async () => {
    await listen();
    const client = new RetryClient({ url: AMQP_URL, queue: suite.queue, delayedDelivery: { prefix } });
    suite.clients.push(client);
    await client.connect();
    const record = new RmqRecordBuilder({ id: 3 }).setOptions({ expiration: '200', headers: { tenant: 'acme' } }).build();
    const sent = Date.now();
    await lastValueFrom(client.emit('order.expiring', record, { delay: 3000 }), { defaultValue: undefined });

    const [arrival] = await waitFor(() => arrivals.length === 1 && arrivals, 'the delayed event', 8_000);
    expect(arrival.at - sent).toBeGreaterThanOrEqual(3000);
    expect(arrival.at - sent).toBeLessThan(3000 + 1500);
    expect(arrival.message.properties.expiration).toBe('200');
    expect(arrival.message.properties.headers).toMatchObject({ tenant: 'acme' });
    expect(JSON.parse(arrival.message.content.toString())).toEqual({ pattern: 'order.expiring', data: { id: 3 } });
  });

  it('the expiration runs from delivery: an unconsumed message is in its queue after the delay and expires after it', async () => {
    suite.app = await startApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix } });
    const sent = Date.now();
    await suite.app.get(RetryPublisher).publish('', suite.queue, { id: 4 }, { delay: 1000, expiration: 600 });

    const inQueue = await waitFor(async () => (await suite.broker.count(suite.queue)) === 1 && Date.now(), 'the delivered message', 5_000);
    expect(inQueue - sent).toBeGreaterThanOrEqual(1000);
    const gone = await waitFor(async () => (await suite.broker.count(suite.queue)) === 0 && Date.now(), 'its expiry', 5_000);
    // Expired 600 ms after delivery (the broker checks a little late, never early), not during the delay.
    expect(gone - sent).toBeGreaterThanOrEqual(1000 + 600 - 25);
  });

  it.each([['-1'], ['soon'], ['1.5'], [-5], [2 ** 32]])('refuses an expiration of %p with a RangeError and publishes nothing', async (expiration) => {
    suite.app = await startApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix } });
    const engine = suite.app.get(RetryEngine);
    await expect(engine.publish('', suite.queue, Buffer.from('{}'), { expiration }, 500)).rejects.toThrow(RangeError);
    await expect(engine.publish('', suite.queue, Buffer.from('{}'), { expiration })).rejects.toThrow(/expiration/);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(await suite.broker.count(suite.queue)).toBe(0);
  });
});
