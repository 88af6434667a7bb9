import type { INestMicroservice } from '@nestjs/common';
import amqp from 'amqplib';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { RetryClient, RetryServer } from 'nestjs-amqp-retry/transport';
import { NestFactory } from '@nestjs/core';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { headersOf, useSuite } from '../support/suite.js';
import { OrdersController, OrdersModule, patternTiers, startRetryMicroservice } from './transport-app.js';

describe('the transport with unreadable messages, gone callers, slow requests, a stop, an unreachable broker and bad options', () => {
  const suite = useSuite<INestMicroservice>('e2e.transport.faults', { extraQueues: patternTiers });

  const calls = () => suite.app!.get(OrdersController).calls;

  it('parks what it cannot read or route, each with its reason, and goes on with the next message', async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue });
    const bodies: Array<[string, Buffer]> = [
      ['not json', Buffer.from('{"pattern": "order.paid", "data": ')],
      ['deeply nested pattern', Buffer.from(`{"pattern":${'{"p":'.repeat(5_000)}1${'}'.repeat(5_000)},"data":1}`)],
      ['huge pattern', Buffer.from(JSON.stringify({ pattern: 'p'.repeat(1_000_000), data: 1 }))],
      ['pattern of another type', Buffer.from(JSON.stringify({ pattern: [1, 2], data: 1 }))],
    ];
    for (const [, body] of bodies) await suite.broker.publish('', suite.queue, body);
    await suite.broker.publish('', suite.queue, { pattern: 'order.paid', data: { id: 1 } });
    await waitFor(() => calls().length === 1, 'the good message after the bad ones');
    const parked = await suite.broker.take(`${suite.queue}.error`, bodies.length, 15_000);
    expect(parked.map((m) => headersOf(m)['x-parked-reason']).sort()).toEqual(['malformed', 'no-handler', 'no-handler', 'no-handler'].sort());
    for (const m of parked) expect(Buffer.byteLength(String(headersOf(m)['x-exception-message']))).toBeLessThanOrEqual(8 * 1024);
    expect(calls()).toHaveLength(1);
    expect(await suite.broker.count(suite.queue)).toBe(0);
  });

  it('acks a request whose caller is gone (its reply queue does not exist) without retrying or parking it', async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue });
    await suite.broker.publish(
      '',
      suite.queue,
      { pattern: 'order.get', data: { id: 3 }, id: 'r-1' },
      { replyTo: uniqueName('e2e.nobody'), correlationId: 'r-1' },
    );
    await suite.broker.publish('', suite.queue, { pattern: 'order.paid', data: { id: 4 } });
    await waitFor(() => calls().length === 1, 'the next event');
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'the queue empty');
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
  });

  it('answers a request that never ends with a timeout error after requestTimeout, freeing its prefetch slot', async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue, prefetch: 1, requestTimeout: '500ms' });
    const client = new RetryClient({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false });
    try {
      const started = Date.now();
      const never = firstValueFrom(client.send('order.never', {}));
      await lastValueFrom(client.emit('order.paid', { id: 21 }), { defaultValue: undefined });
      await expect(never).rejects.toMatchObject({ message: expect.stringContaining('within 500 ms') });
      expect(Date.now() - started).toBeGreaterThanOrEqual(450);
      await waitFor(() => calls().length === 1, 'the event behind the request');
      expect(await suite.broker.count(suite.queue)).toBe(0);
    } finally {
      await client.close();
    }
  });

  it('fails a request whose reply is not a Nest packet, naming why, and answers the next request', async () => {
    const connection = await amqp.connect(AMQP_URL);
    const client = new RetryClient({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false });
    try {
      await suite.broker.declareQueue(suite.queue);
      const channel = await connection.createChannel();
      const replies = [Buffer.from('null'), Buffer.from('[1]'), Buffer.from(JSON.stringify({ response: 'fine', isDisposed: true }))];
      await channel.consume(suite.queue, (message) => {
        if (!message) return;
        const body = replies.shift() ?? Buffer.from('{}');
        channel.sendToQueue(message.properties.replyTo as string, body, { correlationId: message.properties.correlationId as string });
        channel.ack(message);
      });
      await expect(firstValueFrom(client.send('order.get', { id: 1 }))).rejects.toThrow(/not a Nest packet/);
      await expect(firstValueFrom(client.send('order.get', { id: 2 }))).rejects.toThrow(/not a Nest packet/);
      await expect(firstValueFrom(client.send('order.get', { id: 3 }))).resolves.toBe('fine');
    } finally {
      await client.close();
      await connection.close();
    }
  });

  it('fails a request sent as the client closes, and keeps no callback for it', async () => {
    const client = new RetryClient({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false });
    await client.connect();
    const request = expect(firstValueFrom(client.send('order.get', { id: 1 }))).rejects.toThrow(/closed/);
    await client.close();
    await request;
    expect((client as unknown as { routingMap: Map<string, unknown> }).routingMap.size).toBe(0);
  });

  it('reports status and drains on close: a handler in flight finishes and its message is acked, not redelivered', async () => {
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, delays: [300], delayedDelivery: false });
    const statuses: string[] = [];
    server.status.subscribe((s) => statuses.push(s));
    suite.app = await NestFactory.createMicroservice(OrdersModule, { strategy: server, logger: ['error'] });
    await suite.app.listen();
    expect(statuses).toEqual(['connected']);
    const controller = suite.app.get(OrdersController);
    const client = new RetryClient({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false });
    await lastValueFrom(client.emit('order.slow', { id: 5, ms: 600 }), { defaultValue: undefined });
    await client.close();
    await waitFor(() => controller.started.length === 1, 'the slow handler started');
    await suite.app.close();
    suite.app = undefined;
    expect(controller.finished).toEqual([5]);
    expect(statuses).toEqual(['connected', 'disconnected']);
    expect(await suite.broker.count(suite.queue)).toBe(0);
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
  });

  it('fails listen when the broker cannot be reached, naming it, and tells on("error")', async () => {
    const server = new RetryServer({ url: 'amqp://guest:secret@127.0.0.1:1', queue: suite.queue, connectTimeout: '1s', delayedDelivery: false });
    const errors: unknown[] = [];
    server.on('error', (error: unknown) => errors.push(error));
    const failing = await NestFactory.createMicroservice(OrdersModule, { strategy: server, logger: false });
    const started = Date.now();
    await expect(failing.listen()).rejects.toThrow(/127\.0\.0\.1:1/);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).not.toContain('secret');
    await failing.close();
  });

  it('refuses invalid options when it is created, naming the option', () => {
    expect(() => new RetryServer({ queue: '' })).toThrow(/queue/);
    expect(() => new RetryServer({ queue: suite.queue, delays: ['soon'] })).toThrow(/delays/);
    expect(() => new RetryClient({})).toThrow(/"exchange" or "queue"/);
    expect(() => new RetryClient({ queue: suite.queue, exchange: 'x' })).toThrow(/both given/);
  });

  it('refuses a pattern policy with unknown keys at start, naming the pattern', async () => {
    const { BadPolicyModule } = await import('./bad-policy.module.js');
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false });
    const failing = await NestFactory.createMicroservice(BadPolicyModule, { strategy: server, logger: false });
    await expect(failing.listen()).rejects.toThrow(/@EventPattern\("order.bad"\).*"queue"/);
    await failing.close();
  });
});
