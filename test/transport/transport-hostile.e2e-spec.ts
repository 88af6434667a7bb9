import type { INestMicroservice } from '@nestjs/common';
import type { GetMessage } from 'amqplib';
import { lastValueFrom } from 'rxjs';
import { RetryClient, RetryServer } from 'nestjs-amqp-retry/transport';
import { NestFactory } from '@nestjs/core';
import { AMQP_URL, TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { OrdersController, OrdersModule, startRetryMicroservice } from './transport-app.js';

const headersOf = (m: GetMessage) => m.properties.headers as Record<string, unknown>;

describe('the transport under hostile input and at its edges', () => {
  let broker: TestBroker;
  let queue: string;
  let app: INestMicroservice | undefined;

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await broker.close();
  });
  beforeEach(() => {
    queue = uniqueName('e2e.transport.hostile');
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await broker.deleteRetryTopology(queue);
  });

  const calls = () => app!.get(OrdersController).calls;

  it('parks what it cannot read or route, each with its reason, and goes on with the next message', async () => {
    app = await startRetryMicroservice({ queue });
    const bodies: Array<[string, Buffer]> = [
      ['not json', Buffer.from('{"pattern": "order.paid", "data": ')],
      ['deeply nested pattern', Buffer.from(`{"pattern":${'{"p":'.repeat(5_000)}1${'}'.repeat(5_000)},"data":1}`)],
      ['huge pattern', Buffer.from(JSON.stringify({ pattern: 'p'.repeat(1_000_000), data: 1 }))],
      ['pattern of another type', Buffer.from(JSON.stringify({ pattern: [1, 2], data: 1 }))],
    ];
    for (const [, body] of bodies) await broker.publish('', queue, body);
    await broker.publish('', queue, { pattern: 'order.paid', data: { id: 1 } });
    await waitFor(() => calls().length === 1, 'the good message after the bad ones');
    const parked = await broker.take(`${queue}.error`, bodies.length, 15_000);
    expect(parked.map((m) => headersOf(m)['x-parked-reason']).sort()).toEqual(['malformed', 'no-handler', 'no-handler', 'no-handler'].sort());
    for (const m of parked) expect(Buffer.byteLength(String(headersOf(m)['x-exception-message']))).toBeLessThanOrEqual(8 * 1024);
    expect(calls()).toHaveLength(1);
    expect(await broker.count(queue)).toBe(0);
  });

  it('acks a request whose caller is gone (its reply queue does not exist) without retrying or parking it', async () => {
    app = await startRetryMicroservice({ queue });
    await broker.publish(
      '',
      queue,
      { pattern: 'order.get', data: { id: 3 }, id: 'r-1' },
      { replyTo: uniqueName('e2e.nobody'), correlationId: 'r-1' },
    );
    await broker.publish('', queue, { pattern: 'order.paid', data: { id: 4 } });
    await waitFor(() => calls().length === 1, 'the next event');
    await waitFor(async () => (await broker.count(queue)) === 0, 'the queue empty');
    expect(await broker.count(`${queue}.error`)).toBe(0);
  });

  it('reports status and drains on close: a handler in flight finishes and its message is acked, not redelivered', async () => {
    const server = new RetryServer({ url: AMQP_URL, queue, delays: [300], delayedDelivery: false });
    const statuses: string[] = [];
    server.status.subscribe((s) => statuses.push(s));
    app = await NestFactory.createMicroservice(OrdersModule, { strategy: server, logger: ['error'] });
    await app.listen();
    expect(statuses).toEqual(['connected']);
    const controller = app.get(OrdersController);
    const client = new RetryClient({ url: AMQP_URL, queue, delayedDelivery: false });
    await lastValueFrom(client.emit('order.slow', { id: 5, ms: 600 }), { defaultValue: undefined });
    await client.close();
    await waitFor(() => controller.started.length === 1, 'the slow handler started');
    await app.close();
    app = undefined;
    expect(controller.finished).toEqual([5]);
    expect(statuses).toEqual(['connected', 'disconnected']);
    expect(await broker.count(queue)).toBe(0);
    expect(await broker.count(`${queue}.error`)).toBe(0);
  });

  it('fails listen when the broker cannot be reached, naming it, and tells on("error")', async () => {
    const server = new RetryServer({ url: 'amqp://guest:secret@127.0.0.1:1', queue, connectTimeout: '1s', delayedDelivery: false });
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
    expect(() => new RetryServer({ queue, delays: ['soon'] })).toThrow(/delays/);
    expect(() => new RetryClient({})).toThrow(/"exchange" or "queue"/);
    expect(() => new RetryClient({ queue, exchange: 'x' })).toThrow(/both given/);
  });

  it('refuses a pattern policy with unknown keys at start, naming the pattern', async () => {
    const { BadPolicyModule } = await import('./bad-policy.module.js');
    const server = new RetryServer({ url: AMQP_URL, queue, delayedDelivery: false });
    const failing = await NestFactory.createMicroservice(BadPolicyModule, { strategy: server, logger: false });
    await expect(failing.listen()).rejects.toThrow(/@EventPattern\("order.bad"\).*"queue"/);
    await failing.close();
  });
});
