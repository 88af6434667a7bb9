import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientRMQ, EventPattern, MessagePattern, Payload, Transport } from '@nestjs/microservices';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { RetryClient, retryQueueOptions, type PublishedMessage } from 'nestjs-amqp-retry/transport';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { headersOf, useSuite } from '../support/suite.js';
import { OrdersController, patternTiers, startRetryMicroservice, type TransportCall } from './transport-app.js';

const gaps = (calls: TransportCall[]) => calls.slice(1).map((c, i) => c.at - calls[i].at);

describe('RetryServer and RetryClient: the @nestjs/microservices transport', () => {
  const suite = useSuite<INestMicroservice>('e2e.transport', { extraQueues: patternTiers });

  const retryClient = (options: ConstructorParameters<typeof RetryClient>[0] = { queue: suite.queue }) => {
    const client = new RetryClient({ url: AMQP_URL, delayedDelivery: false, ...options });
    suite.clients.push(client);
    return client;
  };
  const nestClient = (options: { queueOptions?: object } = {}) => {
    const client = new ClientRMQ({
      urls: [AMQP_URL],
      queue: suite.queue,
      ...(options.queueOptions ? { queueOptions: options.queueOptions } : { noAssert: true }),
    });
    suite.clients.push(client);
    return client;
  };
  const callsOf = (pattern: string) => suite.app!.get(OrdersController).calls.filter((c) => c.pattern === pattern);

  it("retries each pattern with its own policy: attempts, gaps, then parks with the decorator's headers", async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue }, { passErrorsThrough: true });
    const client = retryClient();
    await lastValueFrom(client.emit('order.created', { id: 1, failures: 99 }), { defaultValue: undefined });
    await lastValueFrom(client.emit('order.paid', { id: 2, failures: 1 }), { defaultValue: undefined });
    await lastValueFrom(client.emit('order.shipped', { id: 3, failures: 99 }), { defaultValue: undefined });

    const [parkedCreated, parkedShipped] = await Promise.all([
      waitFor(() => callsOf('order.created').length >= 3 && callsOf('order.shipped').length >= 4, 'every attempt', 15_000),
    ]).then(() => suite.broker.take(`${suite.queue}.error`, 2, 15_000));
    await waitFor(() => callsOf('order.paid').length >= 2, 'order.paid retried');

    // order.created: its own policy, 3 attempts 200 ms apart
    const created = callsOf('order.created');
    expect(created.map((c) => [c.attempt, c.maxAttempts])).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
    for (const gap of gaps(created)) {
      expect(gap).toBeGreaterThanOrEqual(190);
      expect(gap).toBeLessThan(2_000);
    }
    // order.paid: the server's policy, 2 attempts 300 ms apart, and then it succeeded
    const paid = callsOf('order.paid');
    expect(paid.map((c) => [c.attempt, c.maxAttempts])).toEqual([
      [1, 2],
      [2, 2],
    ]);
    expect(gaps(paid)[0]).toBeGreaterThanOrEqual(290);
    // order.shipped: two tiers of its own, 100 ms then 400 ms (the last repeats)
    const shipped = callsOf('order.shipped');
    expect(shipped.map((c) => c.attempt)).toEqual([1, 2, 3, 4]);
    const [g1, g2, g3] = gaps(shipped);
    expect(g1).toBeGreaterThanOrEqual(90);
    expect(g1).toBeLessThan(390);
    expect(g2).toBeGreaterThanOrEqual(390);
    expect(g3).toBeGreaterThanOrEqual(390);

    const parked = [parkedCreated, parkedShipped].map((m) => ({
      body: JSON.parse(m.content.toString()) as { pattern: string },
      headers: headersOf(m),
    }));
    const byPattern = Object.fromEntries(parked.map((p) => [p.body.pattern, p.headers]));
    expect(byPattern['order.created']).toMatchObject({
      'x-parked-reason': 'exhausted',
      'x-retry-attempts': 3,
      'x-original-routing-key': suite.queue,
    });
    expect(byPattern['order.created']['x-exception-message']).toBe('order.created failure 3 of order 1');
    expect(byPattern['order.shipped']).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 4 });
    for (const headers of Object.values(byPattern)) {
      expect(headers['x-death']).toBeUndefined();
      expect(headers['x-retry-first-failure']).toBeUndefined();
    }
    expect(await suite.broker.count(suite.queue)).toBe(0);
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
  });

  it('parks at once on NonRetryableError wrapped in an RpcException', async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue });
    await lastValueFrom(retryClient().emit('order.created', { id: 4, nonRetryable: 'wrapped' }), { defaultValue: undefined });
    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1);
    expect(headersOf(parked)).toMatchObject({
      'x-parked-reason': 'non-retryable',
      'x-retry-attempts': 1,
      'x-exception-message': 'order 4 is invalid',
    });
    expect(callsOf('order.created')).toHaveLength(1);
  });

  it('parks a plain NonRetryableError at once when RetryRpcExceptionFilter lets it through; without it, retries', async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue }, { passErrorsThrough: true });
    await lastValueFrom(retryClient().emit('order.created', { id: 13, nonRetryable: 'plain' }), { defaultValue: undefined });
    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1);
    expect(headersOf(parked)).toMatchObject({
      'x-parked-reason': 'non-retryable',
      'x-retry-attempts': 1,
      'x-exception-message': 'order 13 is invalid',
    });
    expect(callsOf('order.created')).toHaveLength(1);
    await suite.app.close();

    // Nest's default filter turns it into { status: 'error', message: 'Internal server error' }: an ordinary failure.
    suite.app = await startRetryMicroservice({ queue: suite.queue });
    await lastValueFrom(retryClient().emit('order.created', { id: 14, nonRetryable: 'plain' }), { defaultValue: undefined });
    const [exhausted] = await suite.broker.take(`${suite.queue}.error`, 1, 10_000);
    expect(headersOf(exhausted)).toMatchObject({
      'x-parked-reason': 'exhausted',
      'x-retry-attempts': 3,
      'x-exception-message': 'Internal server error',
    });
  });

  it("parks a pattern nobody handles as no-handler, from Nest's own ClientRMQ, and keeps consuming", async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue });
    const client = nestClient();
    await client.connect();
    await lastValueFrom(client.emit('order.refunded', { id: 5 }), { defaultValue: undefined });
    await lastValueFrom(client.emit('order.paid', { id: 6 }), { defaultValue: undefined });
    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1);
    expect(headersOf(parked)).toMatchObject({ 'x-parked-reason': 'no-handler', 'x-retry-attempts': 0 });
    expect(String(headersOf(parked)['x-exception-message'])).toContain('"order.refunded"');
    expect(JSON.parse(parked.content.toString())).toEqual({ pattern: 'order.refunded', data: { id: 5 } });
    await waitFor(() => callsOf('order.paid').length === 1, 'the next event handled');
    expect(callsOf('order.paid')[0].data).toEqual({ id: 6 });
  });

  it("takes events from Nest's ClientRMQ declaring the queue with retryQueueOptions (classic and quorum)", async () => {
    for (const queueType of ['classic', 'quorum'] as const) {
      if (queueType === 'quorum') {
        await suite.app?.close();
        await suite.broker.deleteRetryTopology(suite.queue, { queues: patternTiers(suite.queue) });
        suite.queue = uniqueName('e2e.transport.quorum');
      }
      suite.app = await startRetryMicroservice({ queue: suite.queue, queueType });
      const client = nestClient({ queueOptions: retryQueueOptions(suite.queue, { queueType }) });
      await client.connect();
      await lastValueFrom(client.emit('order.paid', { id: 20 }), { defaultValue: undefined });
      await waitFor(() => callsOf('order.paid').length === 1, `the event on a ${queueType} queue`);
      await client.close();
    }
  });

  it("answers requests from Nest's ClientRMQ and from RetryClient, errors included, over direct reply-to", async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue });
    const nest = nestClient();
    await nest.connect();
    expect(await firstValueFrom(nest.send('order.get', { id: 7 }))).toEqual({ id: 7, status: 'paid' });
    expect(await firstValueFrom(nest.send({ cmd: 'sum' }, [1, 2, 3]))).toBe(6);
    await expect(firstValueFrom(nest.send('order.get', { id: -1 }))).rejects.toMatchObject({ message: 'no order -1' });

    const ours = retryClient();
    expect(await firstValueFrom(ours.send('order.get', { id: 8 }))).toEqual({ id: 8, status: 'paid' });
    expect(await firstValueFrom(ours.send({ cmd: 'sum' }, [4, 5]))).toBe(9);
    await expect(firstValueFrom(ours.send('order.get', { id: -2 }))).rejects.toMatchObject({ message: 'no order -2' });
    await expect(firstValueFrom(ours.send('order.unknown', {}))).rejects.toBe('There is no matching message handler defined in the remote service.');
    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1);
    expect(headersOf(parked)['x-parked-reason']).toBe('no-handler');
    expect(await suite.broker.count(suite.queue)).toBe(0);
  });

  it('delivers a delayed emit after its delay, through the ladder', async () => {
    const prefix = suite.ladder();
    suite.app = await startRetryMicroservice({ queue: suite.queue });
    const client = retryClient({ queue: suite.queue, delayedDelivery: { prefix } });
    const sent = Date.now();
    await lastValueFrom(client.emit('order.paid', { id: 10 }, { delay: 700 }), { defaultValue: undefined });
    await lastValueFrom(client.emit('order.paid', { id: 11 }), { defaultValue: undefined });
    await waitFor(() => callsOf('order.paid').length === 2, 'both events', 10_000);
    const [now, later] = callsOf('order.paid');
    expect(now.data).toEqual({ id: 11 });
    expect(later.data).toEqual({ id: 10 });
    expect(later.at - sent).toBeGreaterThanOrEqual(700);
    expect(later.at - sent).toBeLessThan(3_000);
  });

  it('emits with the basic properties given and resolves with what it sent; a bad property is refused, nothing sent', async () => {
    suite.app = await startRetryMicroservice({ queue: suite.queue });
    const client = retryClient();
    const at = new Date('2030-01-02T03:04:05.678Z');
    const options = { correlationId: 'req-9', type: 'order.paid.v2', appId: 'shop', timestamp: at, priority: 3, messageId: 'paid-9' };
    const sent = await lastValueFrom(client.emit<PublishedMessage>('order.paid', { id: 9 }, options));
    expect(sent).toMatchObject({ messageId: 'paid-9', exchange: '', routingKey: suite.queue, delayMs: 0 });
    const emitted = client.emit<PublishedMessage>('order.paid', { id: 10 }); // hot: sent at once
    await waitFor(() => callsOf('order.paid').length === 2, 'the second event handled, before anyone subscribed');
    const generated = await lastValueFrom(emitted); // a late subscriber still gets what was sent
    expect(generated.messageId).toMatch(/^[0-9a-f-]{36}$/);
    await expect(lastValueFrom(client.emit('order.paid', { id: 11 }, { priority: 256 }))).rejects.toThrow(RangeError);
    await waitFor(() => callsOf('order.paid').length === 2, 'both events');
    const [first, second] = callsOf('order.paid');
    expect(first.properties).toMatchObject({
      messageId: 'paid-9',
      correlationId: 'req-9',
      type: 'order.paid.v2',
      appId: 'shop',
      priority: 3,
      timestamp: Math.floor(at.getTime() / 1000),
      contentType: 'application/json',
    });
    expect(second.properties.messageId).toBe(generated.messageId);
    expect(callsOf('order.paid').map((c) => c.data)).toEqual([{ id: 9 }, { id: 10 }]); // the refused one never arrived
  });

  it('rejects an emit that no queue takes, and fails a request that no queue takes at once', async () => {
    const client = retryClient({ queue: uniqueName('e2e.transport.nobody') });
    await expect(lastValueFrom(client.emit('order.paid', { id: 12 }))).rejects.toMatchObject({ name: 'PublishError' });
    const started = Date.now();
    await expect(firstValueFrom(client.send('order.get', { id: 1 }))).rejects.toMatchObject({
      message: expect.stringContaining('no queue took the request'),
    });
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

@Controller()
class PlainRmqController {
  readonly events: unknown[] = [];

  @EventPattern('order.paid')
  paid(@Payload() data: unknown): void {
    this.events.push(data);
  }

  @MessagePattern('order.get')
  get(@Payload() query: { id: number }): { id: number; via: string } {
    return { id: query.id, via: 'ServerRMQ' };
  }
}

@Module({ controllers: [PlainRmqController] })
class PlainRmqModule {}

describe("RetryClient to Nest's own ServerRMQ", () => {
  const suite = useSuite<INestMicroservice>('e2e.transport.nest');

  it('emits (also delayed) and sends to a queue that ServerRMQ consumes', async () => {
    const { queue } = suite;
    const prefix = suite.ladder();
    const server = await NestFactory.createMicroservice(PlainRmqModule, {
      transport: Transport.RMQ,
      options: { urls: [AMQP_URL], queue, queueOptions: { durable: true } },
      logger: ['error'],
    });
    suite.app = server;
    await server.listen();
    const client = new RetryClient({ url: AMQP_URL, queue, delayedDelivery: { prefix } });
    suite.clients.push(client);
    await lastValueFrom(client.emit('order.paid', { id: 1 }), { defaultValue: undefined });
    const sent = Date.now();
    await lastValueFrom(client.emit('order.paid', { id: 2 }, { delay: 500 }), { defaultValue: undefined });
    const controller = server.get(PlainRmqController);
    await waitFor(() => controller.events.length === 2, 'both events at ServerRMQ', 10_000);
    expect(controller.events).toEqual([{ id: 1 }, { id: 2 }]);
    expect(Date.now() - sent).toBeGreaterThanOrEqual(500);
    expect(await firstValueFrom(client.send('order.get', { id: 3 }))).toEqual({ id: 3, via: 'ServerRMQ' });
  });
});
