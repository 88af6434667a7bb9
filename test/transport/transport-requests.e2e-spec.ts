import { Controller, Module, type INestMicroservice, type LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientRMQ, Ctx, EventPattern, MessagePattern, Payload, RmqRecordBuilder, RpcException } from '@nestjs/microservices';
import { from, lastValueFrom, timeout, toArray, type Observable } from 'rxjs';
import { RetryClient, RetryRmqContext, RetryServer, type RetryServerOptions } from 'nestjs-amqp-retry/transport';
import { closeConnections, connectionsNamed } from '../support/broker-control.js';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { useSuite } from '../support/suite.js';

@Controller()
class RequestsController {
  readonly events: number[] = [];
  readonly rpcFailures: number[] = [];

  @MessagePattern('three')
  three(): Observable<number> {
    return from([1, 2, 3]);
  }

  @MessagePattern('bigint')
  bigint(): { n: bigint } {
    return { n: 1n };
  }

  @MessagePattern('slow')
  async slow(@Payload() ms: number): Promise<string> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return 'late';
  }

  readonly headers: Array<Record<string, unknown> | undefined> = [];

  @EventPattern<string>('ping')
  ping(@Payload() id: number, @Ctx() ctx: RetryRmqContext): void {
    this.events.push(id);
    this.headers.push(ctx.getMessage().properties.headers as Record<string, unknown> | undefined);
  }

  @MessagePattern('echo')
  echo(@Payload() data: unknown, @Ctx() ctx: RetryRmqContext): { data: unknown; tenant: unknown; priority: unknown } {
    const { headers, priority } = ctx.getMessage().properties;
    return { data, tenant: (headers as Record<string, unknown> | undefined)?.['x-tenant'], priority };
  }

  readonly metadata: unknown[] = [];

  @EventPattern<string>('tagged')
  tagged(@Payload() id: number, @Ctx() ctx: RetryRmqContext): void {
    this.events.push(id);
    this.metadata.push(ctx.getMetadata());
  }

  @MessagePattern('tagged.get')
  taggedGet(@Payload() data: { a: number; b: number }, @Ctx() ctx: RetryRmqContext): { sum: number; metadata: unknown } {
    return { sum: data.a + data.b, metadata: ctx.getMetadata() };
  }

  @EventPattern<string>('rpc.fails')
  rpcFails(@Payload() id: number, @Ctx() ctx: RetryRmqContext): void {
    if (ctx.getRetryContext().attempt === 1) {
      this.rpcFailures.push(id);
      throw new RpcException('expected, retried');
    }
    this.events.push(id);
  }
}

@Module({ controllers: [RequestsController] })
class RequestsModule {}

describe('requests and the client of the transport', () => {
  const suite = useSuite<INestMicroservice>('e2e.transport.requests');

  const start = async (options: Partial<RetryServerOptions> = {}, logger: LoggerService | false = false) => {
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, delays: [100], maxAttempts: 2, delayedDelivery: false, ...options });
    suite.app = await NestFactory.createMicroservice(RequestsModule, { strategy: server, logger });
    await suite.app.listen();
    return suite.app.get(RequestsController);
  };
  const retryClient = (options: Partial<ConstructorParameters<typeof RetryClient>[0]> = {}) => {
    const client = new RetryClient({ url: AMQP_URL, queue: suite.queue, delayedDelivery: false, ...options });
    suite.clients.push(client);
    return client;
  };

  it('answers a stream of values in order, then ends it, to RetryClient and to ClientRMQ', async () => {
    await start();
    expect(await lastValueFrom(retryClient().send('three', {}).pipe(toArray()))).toEqual([1, 2, 3]);
    const nest = new ClientRMQ({ urls: [AMQP_URL], queue: suite.queue, noAssert: true });
    suite.clients.push(nest);
    expect(await lastValueFrom(nest.send('three', {}).pipe(toArray()))).toEqual([1, 2, 3]);
  });

  it("handles ClientRMQ's events and answers its requests when Nest's dispatch hook adds metadata, between the processing hooks", async () => {
    const server = new RetryServer({ url: AMQP_URL, queue: suite.queue, delays: [100], maxAttempts: 2, delayedDelivery: false });
    const hooks: string[] = [];
    const patternOf = (context: unknown) => (context as RetryRmqContext).getPattern();
    server.setOnProcessingStartHook((_transport, context, done) => {
      hooks.push(`start ${patternOf(context)} ${JSON.stringify((context as RetryRmqContext).getMetadata())}`);
      return done();
    });
    server.setOnProcessingEndHook((_transport, context) => hooks.push(`end ${patternOf(context)}`));
    suite.app = await NestFactory.createMicroservice(RequestsModule, { strategy: server, logger: false });
    await suite.app.listen();
    const controller = suite.app.get(RequestsController);
    const nest = new ClientRMQ({ urls: [AMQP_URL], queue: suite.queue, noAssert: true });
    suite.clients.push(nest);
    const metadata = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    nest.setOnDispatchHook((packet) => void (packet.metadata = metadata));

    await lastValueFrom(nest.emit('tagged', 21), { defaultValue: undefined });
    await waitFor(() => controller.events.includes(21), 'the event with metadata handled');
    expect(controller.metadata).toEqual([metadata]);
    const answer = await lastValueFrom(nest.send('tagged.get', { a: 1, b: 2 }).pipe(timeout(5_000)));
    expect(answer).toEqual({ sum: 3, metadata });
    await waitFor(() => hooks.length === 4, 'the end hook of the request');
    const text = JSON.stringify(metadata);
    expect(hooks).toEqual([`start tagged ${text}`, 'end tagged', `start tagged.get ${text}`, 'end tagged.get']);
  });

  it('answers with an error when the response cannot be written as JSON, rather than leaving the caller waiting', async () => {
    await start();
    const client = retryClient();
    const answered = lastValueFrom(client.send('bigint', {}).pipe(timeout(5_000)));
    await expect(answered).rejects.toMatchObject({ message: expect.stringMatching(/JSON|serialize|BigInt/i) });
    expect(await lastValueFrom(client.send('three', {}).pipe(toArray()))).toEqual([1, 2, 3]); // the server goes on
  });

  it("sends Nest's RmqRecord as ClientRMQ does: its data is the payload, its options the message's properties", async () => {
    const controller = await start();
    const client = retryClient();
    const record = (data: unknown) => new RmqRecordBuilder(data).setOptions({ headers: { 'x-tenant': 'acme' }, priority: 3 }).build();
    await lastValueFrom(client.emit('ping', record(11)), { defaultValue: undefined });
    await waitFor(() => controller.events.includes(11), 'the event');
    expect(controller.headers[0]).toMatchObject({ 'x-tenant': 'acme' });
    expect(await lastValueFrom(client.send('echo', record({ id: 12 })))).toEqual({ data: { id: 12 }, tenant: 'acme', priority: 3 });
  });

  it('fails only the send whose RmqRecord has a property the broker refuses, not the requests in flight on its channel', async () => {
    await start();
    const client = retryClient();
    expect(await lastValueFrom(client.send('slow', 1))).toBe('late'); // connected, request channel open
    const inFlight = [1, 2, 3].map(() => lastValueFrom(client.send('slow', 800)));
    for (const options of [{ expiration: '-5' }, { userId: 'mallory' }]) {
      const refused = lastValueFrom(client.send('slow', new RmqRecordBuilder(1).setOptions(options).build()));
      await expect(refused).rejects.toThrow(
        options.userId ? /RetryClient.send: Invalid userId "mallory"/ : /RetryClient.send: Invalid expiration "-5"/,
      );
    }
    expect(await Promise.all(inFlight)).toEqual(['late', 'late', 'late']);
  });

  it("fails a request to a missing exchange with the broker's reason, and the client goes on", async () => {
    await start();
    const client = retryClient({ exchange: uniqueName('e2e.transport.requests.missing'), queue: undefined });
    await expect(lastValueFrom(client.send('echo', 1))).rejects.toThrow(
      /^RetryClient.send: the channel for requests and replies closed \(.*NOT_FOUND - no exchange/,
    );
    await expect(lastValueFrom(client.send('echo', 2))).rejects.toThrow(/NOT_FOUND - no exchange/); // on a channel opened again
  });

  it('fails a send whose packet JSON cannot write with that error, and keeps no callback for it', async () => {
    await start();
    const client = retryClient();
    for (let i = 0; i < 3; i++) {
      await expect(lastValueFrom(client.send('echo', { n: 1n }))).rejects.toThrow(/^RetryClient.send: .*BigInt/);
    }
    expect((client as unknown as { routingMap: Map<string, unknown> }).routingMap.size).toBe(0);
    expect(await lastValueFrom(client.send('echo', 1))).toMatchObject({ data: 1 }); // the client goes on
  });

  it('fails the requests in flight at once when the client closes', async () => {
    await start();
    const client = retryClient();
    const pending = lastValueFrom(client.send('slow', 3_000));
    await new Promise((resolve) => setTimeout(resolve, 300)); // the request is on its way
    const failed = expect(pending).rejects.toThrow(/closed/);
    const closedAt = Date.now();
    await client.close();
    await failed;
    expect(Date.now() - closedAt).toBeLessThan(1_000);
  });

  it('fails a request in flight when its connection is lost, and sends the next after the reconnection', async () => {
    await start();
    const connectionName = uniqueName('e2e-requests-client');
    const client = retryClient({ connectionName });
    expect(await lastValueFrom(client.send('three', {}))).toBe(3); // connected, reply channel open
    const pending = lastValueFrom(client.send('slow', 8_000)); // longer than rabbitmqctl takes to close the connection
    await new Promise((resolve) => setTimeout(resolve, 300));
    const failed = expect(pending).rejects.toThrow(/RetryClient.send/);
    expect(await closeConnections(connectionName)).toBeGreaterThan(0);
    const lostAt = Date.now();
    await failed;
    expect(Date.now() - lostAt).toBeLessThan(1_000);
    const again = await waitFor(
      async () => lastValueFrom(client.send('three', {}).pipe(toArray())).catch(() => undefined),
      'a request after the reconnection',
      15_000,
    );
    expect(again).toEqual([1, 2, 3]);
  });

  it('leaves no connection open when it is closed while connecting', async () => {
    const connectionName = uniqueName('e2e-requests-closing');
    const client = new RetryClient({ url: AMQP_URL, queue: suite.queue, connectionName }); // delayed delivery on: it also consumes
    const connecting = client.connect().catch(() => undefined);
    await client.close();
    await connecting;
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // a connection opened late would be up by now
    expect(await connectionsNamed(connectionName)).toEqual([]);
  });

  it('does not have Nest log an RpcException of an event handler as unhandled: the transport retries it', async () => {
    const logger = new RecordingLogger();
    const controller = await start({}, logger);
    await suite.broker.publish('', suite.queue, { pattern: 'rpc.fails', data: 9 });
    await waitFor(() => controller.events.includes(9), 'the second attempt');
    expect(controller.rpcFailures).toEqual([9]);
    expect(logger.lines.filter((line) => line.startsWith('error') && line.includes('expected, retried'))).toEqual([]);
  });
});
