import {
  BadRequestException,
  Controller,
  Injectable,
  Module,
  UseGuards,
  UseInterceptors,
  UsePipes,
  type CallHandler,
  type CanActivate,
  type ExecutionContext,
  type INestMicroservice,
  type LoggerService,
  type NestInterceptor,
  type PipeTransform,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RetryEngine, RetryModule, retryTopologyNames, RetryWithBackoff } from 'nestjs-amqp-retry';
import { ClientRMQ, Ctx, EventPattern, MessagePattern, Payload, RmqRecordBuilder, RpcException } from '@nestjs/microservices';
import { from, lastValueFrom, timeout, toArray, type Observable } from 'rxjs';
import { RetryClient, RetryRmqContext, RetryRpcExceptionFilter, RetryServer, type RetryServerOptions } from 'nestjs-amqp-retry/transport';
import { closeConnections, connectionsNamed } from '../support/broker-control.js';
import { AMQP_URL, TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { OrdersController, patternTiers, startRetryMicroservice } from './transport-app.js';
import { RecordingLogger } from '../support/recording-logger.js';

@Controller()
class FirstOfTwoController {
  readonly attempts: number[] = [];

  @EventPattern<string>('twice')
  first(@Payload() _data: unknown, @Ctx() ctx: RetryRmqContext): void {
    this.attempts.push(ctx.getRetryContext().attempt);
  }
}

@Controller()
class SecondOfTwoController {
  @EventPattern<string>('twice', { retry: { delays: [100], maxAttempts: 5 } })
  second(): void {
    throw new Error('always fails');
  }
}

/** Two handlers of one pattern (Nest chains them): only the second gives the pattern a retry policy. */
@Module({ controllers: [FirstOfTwoController, SecondOfTwoController] })
class TwoHandlersModule {}

@Controller()
class NextVersionController {
  readonly attempts: Array<{ id: number; attempt: number }> = [];

  @EventPattern<string>('order.created', { retry: { delays: [500], maxAttempts: 2 } })
  created(@Payload() order: { id: number }, @Ctx() ctx: RetryRmqContext): void {
    this.attempts.push({ id: order.id, attempt: ctx.getRetryContext().attempt });
    throw new Error('the next version fails too');
  }
}

/** order.created with another policy than OrdersController's (3 attempts, 200 ms): a rolling deploy's other half. */
@Module({ controllers: [NextVersionController] })
class NextVersionModule {}

@Injectable()
class DenyGuard implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

class RejectingPipe implements PipeTransform {
  transform(): never {
    throw new BadRequestException('id must be a number');
  }
}

/** What an interceptor sees as the RPC context: the transport's, with the attempt. */
@Injectable()
class AttemptInterceptor implements NestInterceptor {
  static seen: Array<{ isRetryContext: boolean; attempt?: number }> = [];
  intercept(context: ExecutionContext, next: CallHandler) {
    const ctx: unknown = context.switchToRpc().getContext();
    AttemptInterceptor.seen.push({
      isRetryContext: ctx instanceof RetryRmqContext,
      attempt: ctx instanceof RetryRmqContext ? ctx.getRetryContext().attempt : undefined,
    });
    return next.handle();
  }
}

@Controller()
class PipelineController {
  called = 0;

  @UseGuards(DenyGuard)
  @EventPattern<string>('guarded')
  guarded(): void {
    this.called++;
  }

  @UsePipes(RejectingPipe)
  @EventPattern<string>('validated')
  validated(@Payload() _data: unknown): void {
    this.called++;
  }

  @UseInterceptors(AttemptInterceptor)
  @EventPattern<string>('intercepted')
  intercepted(@Payload() _data: unknown, @Ctx() ctx: RetryRmqContext): void {
    if (ctx.getRetryContext().attempt === 1) throw new Error('first attempt fails');
  }
}

@Module({ controllers: [PipelineController], providers: [DenyGuard, AttemptInterceptor] })
class PipelineModule {}

@Controller()
class LongDelayController {
  readonly at: number[] = [];

  @EventPattern<string>('order.audited', { retry: { delays: [1500], maxAttempts: 2 } })
  audited(@Ctx() ctx: RetryRmqContext): void {
    this.at.push(Date.now());
    if (ctx.getRetryContext().attempt === 1) throw new Error('first attempt fails');
  }
}

@Module({ controllers: [LongDelayController] })
class LongDelayModule {}

describe('the transport, reviewed', () => {
  let broker: TestBroker;
  let queue: string;
  let app: INestMicroservice | undefined;
  const exchanges: string[] = [];

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await broker.close();
  });
  beforeEach(() => {
    queue = uniqueName('e2e.transport.review');
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    const extraTiers = [
      ...patternTiers(queue),
      ...retryTopologyNames(queue, { delays: [100] }).tiers,
      ...retryTopologyNames(queue, { delays: [500] }).tiers,
      ...retryTopologyNames(queue, { delays: [1500] }).tiers,
    ];
    await broker.deleteRetryTopology(queue, { queues: extraTiers, exchanges: exchanges.splice(0) });
  });

  const calls = (pattern: string) => app!.get(OrdersController).calls.filter((c) => c.pattern === pattern);

  it('routes a body without the envelope by the key it was published with on every attempt, not by the tier that sent it back', async () => {
    const exchange = uniqueName('e2e.transport.review.x');
    exchanges.push(exchange);
    app = await startRetryMicroservice({ queue, exchange }, { passErrorsThrough: true });
    // order.paid retries on the queue's schedule (a nack), order.created on its own (the first failure is moved)
    await broker.publish(exchange, 'order.paid', { id: 1, failures: 1 });
    await broker.publish(exchange, 'order.created', { id: 2, failures: 1 });
    await waitFor(() => calls('order.paid').length === 2 && calls('order.created').length === 2, 'both retried once', 15_000);
    expect(calls('order.paid').map((c) => c.attempt)).toEqual([1, 2]);
    expect(calls('order.created').map((c) => c.attempt)).toEqual([1, 2]);
    expect(await broker.count(`${queue}.error`)).toBe(0);
  });

  it('retries patterns with schedules of their own on a quorum queue, then parks with their attempts', async () => {
    app = await startRetryMicroservice({ queue, queueType: 'quorum' }, { passErrorsThrough: true });
    await broker.publish('', queue, { pattern: 'order.created', data: { id: 1, failures: 1 } });
    await broker.publish('', queue, { pattern: 'order.shipped', data: { id: 2, failures: 99 } });
    const [parked] = await broker.take(`${queue}.error`, 1, 15_000);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 4 });
    expect(calls('order.created').map((c) => c.attempt)).toEqual([1, 2]);
    expect(calls('order.shipped').map((c) => c.attempt)).toEqual([1, 2, 3, 4]);
  });

  it('binds no pattern longer than a routing key may be, and a client cannot publish one, without breaking the next emit', async () => {
    const exchange = uniqueName('e2e.transport.review.x');
    exchanges.push(exchange);
    app = await startRetryMicroservice({ queue, exchange }, { passErrorsThrough: true });
    const client = new RetryClient({ url: AMQP_URL, exchange, delayedDelivery: false });
    try {
      await expect(lastValueFrom(client.emit('p'.repeat(300), { id: 1 }), { defaultValue: undefined })).rejects.toThrow();
      await lastValueFrom(client.emit('order.paid', { id: 2 }), { defaultValue: undefined });
      await lastValueFrom(client.emit({ cmd: 'sum' }, [1, 2]), { defaultValue: undefined });
    } finally {
      await client.close();
    }
    await waitFor(() => calls('order.paid').length === 1, 'the emit after the refused one');
  });

  it('ignores a first-failure header on a message that never waited in a tier: it costs no attempt', async () => {
    app = await startRetryMicroservice({ queue, maxAttempts: 1 });
    const forged = { 'x-retry-first-failure': queue, 'x-retry-first-exchange': '', 'x-retry-first-routing-key': 'order.created' };
    await broker.publish('', queue, { pattern: 'order.paid', data: { id: 1 } }, { headers: forged });
    await waitFor(() => calls('order.paid').length === 1, 'the handler to run once', 5_000);
    await waitFor(async () => (await broker.count(queue)) === 0, 'the message acked');
    expect(await broker.count(`${queue}.error`)).toBe(0);
  });

  it('parks an event for a @MessagePattern handler that fails, rather than dropping it', async () => {
    app = await startRetryMicroservice({ queue }, { passErrorsThrough: true });
    await broker.publish('', queue, { pattern: 'order.get', data: { id: -1 } }); // an event: no id, no replyTo
    const [parked] = await broker.take(`${queue}.error`, 1, 10_000);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 1 });
    expect(JSON.parse(parked.content.toString())).toEqual({ pattern: 'order.get', data: { id: -1 } });
  });

  it('parks each message once when two versions with different policies for a pattern share the queue', async () => {
    app = await startRetryMicroservice({ queue }, { passErrorsThrough: true });
    const next = new RetryServer({ url: AMQP_URL, queue, delays: [300], maxAttempts: 2, delayedDelivery: false });
    const other = await NestFactory.createMicroservice(NextVersionModule, { strategy: next, logger: ['error'] });
    other.useGlobalFilters(new RetryRpcExceptionFilter());
    await other.listen();
    try {
      const ids = [1, 2, 3, 4, 5, 6];
      for (const id of ids) await broker.publish('', queue, { pattern: 'order.created', data: { id, failures: 99 } });
      const parked = await broker.take(`${queue}.error`, ids.length, 20_000);
      const parkedIds = parked.map((m) => (JSON.parse(m.content.toString()) as { data: { id: number } }).data.id).sort();
      expect(parkedIds).toEqual(ids);
      const attempts = [...calls('order.created'), ...other.get(NextVersionController).attempts.map((a) => ({ data: { id: a.id }, ...a }))];
      expect(calls('order.created').length).toBeGreaterThan(0); // both versions took part
      expect(other.get(NextVersionController).attempts.length).toBeGreaterThan(0);
      for (const id of ids) {
        const mine = attempts
          .filter((a) => (a.data as { id: number }).id === id)
          .map((a) => a.attempt)
          .sort();
        expect(mine[0]).toBe(1);
        expect(mine).toEqual(mine.map((_, i) => i + 1)); // 1, 2, ... without a gap or a repeat
        expect(mine.length).toBeLessThanOrEqual(3);
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // a duplicate would be parked by now
      expect(await broker.count(`${queue}.error`)).toBe(0);
    } finally {
      await other.close();
    }
    for (const tier of [...patternTiers(queue), ...retryTopologyNames(queue, { delays: [500] }).tiers]) expect(await broker.count(tier)).toBe(0);
  });

  it("runs Nest's pipeline: a denying guard and a rejecting pipe park after the attempts, interceptors see the retry context", async () => {
    AttemptInterceptor.seen = [];
    const server = new RetryServer({ url: AMQP_URL, queue, delays: [100], maxAttempts: 2, delayedDelivery: false });
    app = await NestFactory.createMicroservice(PipelineModule, { strategy: server, logger: false });
    app.useGlobalFilters(new RetryRpcExceptionFilter());
    await app.listen();
    await broker.publish('', queue, { pattern: 'guarded', data: 1 });
    await broker.publish('', queue, { pattern: 'validated', data: 'x' });
    await broker.publish('', queue, { pattern: 'intercepted', data: 2 });
    const parked = await broker.take(`${queue}.error`, 2, 10_000);
    const byPattern = Object.fromEntries(
      parked.map((m) => [(JSON.parse(m.content.toString()) as { pattern: string }).pattern, m.properties.headers as Record<string, unknown>]),
    );
    expect(byPattern.guarded).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 2, 'x-exception-message': 'Forbidden resource' });
    expect(byPattern.validated).toMatchObject({
      'x-parked-reason': 'exhausted',
      'x-retry-attempts': 2,
      'x-exception-message': 'id must be a number',
    });
    expect(app.get(PipelineController).called).toBe(0);
    await waitFor(() => AttemptInterceptor.seen.length === 2, 'the retried handler twice');
    expect(AttemptInterceptor.seen).toEqual([
      { isRetryContext: true, attempt: 1 },
      { isRetryContext: true, attempt: 2 },
    ]);
  });

  it("waits a pattern's own first delay even for a message published with a shorter per-message TTL", async () => {
    const server = new RetryServer({ url: AMQP_URL, queue, delays: [300], maxAttempts: 2, delayedDelivery: false });
    app = await NestFactory.createMicroservice(LongDelayModule, { strategy: server, logger: false });
    await app.listen();
    // The consumer takes it at once, well within its TTL; the broker drops a TTL when it dead-letters, so must a move.
    await broker.publish('', queue, { pattern: 'order.audited', data: { id: 1 } }, { expiration: '400' });
    const controller = app.get(LongDelayController);
    await waitFor(() => controller.at.length === 2, 'the second attempt', 10_000);
    expect(controller.at[1] - controller.at[0]).toBeGreaterThanOrEqual(1_400);
    expect(await broker.count(`${queue}.error`)).toBe(0);
  });

  it('takes the retry policy of a pattern from whichever of its chained handlers gives it', async () => {
    const server = new RetryServer({ url: AMQP_URL, queue, delays: [300], maxAttempts: 2, delayedDelivery: false });
    app = await NestFactory.createMicroservice(TwoHandlersModule, { strategy: server, logger: ['error'] });
    await app.listen();
    await broker.publish('', queue, { pattern: 'twice', data: { id: 1 } });
    const [parked] = await broker.take(`${queue}.error`, 1, 15_000);
    expect(parked.properties.headers).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 5 });
    expect(app.get(FirstOfTwoController).attempts).toEqual([1, 2, 3, 4, 5]);
  });
});

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

/** A Nest logger that keeps what it is given. */
const sharedQueue = uniqueName('e2e.transport.review.shared');

@Injectable()
class SharedQueueHandler {
  @RetryWithBackoff({ queue: sharedQueue, delays: [100], maxAttempts: 2 })
  handle(): void {}
}

@Module({ imports: [RetryModule.forRoot({ url: AMQP_URL, delayedDelivery: false })], providers: [SharedQueueHandler] })
class SharedQueueModule {}

describe("the transport, reviewed: a hybrid application whose transport queue is a decorator handler's", () => {
  afterAll(async () => {
    const broker = await TestBroker.connect();
    await broker.deleteRetryTopology(sharedQueue);
    await broker.close();
  });

  for (const order of ['microservices first', 'init first'] as const) {
    it(`refuses to start, naming the queue (${order})`, async () => {
      const hybrid = await NestFactory.create(SharedQueueModule, { logger: false });
      try {
        hybrid.connectMicroservice({ strategy: new RetryServer({ queue: sharedQueue, engine: hybrid.get(RetryEngine) }) });
        const starting =
          order === 'microservices first'
            ? hybrid.startAllMicroservices().then(() => hybrid.init())
            : hybrid.init().then(() => hybrid.startAllMicroservices());
        await expect(starting).rejects.toThrow(/SharedQueueHandler\.handle is "e2e\.transport\.review\.shared\.\w+", which RetryServer/);
      } finally {
        await hybrid.close().catch(() => undefined);
      }
    });
  }
});

describe('the transport, reviewed: requests and the client', () => {
  let broker: TestBroker;
  let queue: string;
  let app: INestMicroservice | undefined;
  const clients: Array<{ close(): unknown }> = [];

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await broker.close();
  });
  beforeEach(() => {
    queue = uniqueName('e2e.transport.review.rpc');
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
    await app?.close();
    app = undefined;
    await broker.deleteRetryTopology(queue);
  });

  const start = async (options: Partial<RetryServerOptions> = {}, logger: LoggerService | false = false) => {
    const server = new RetryServer({ url: AMQP_URL, queue, delays: [100], maxAttempts: 2, delayedDelivery: false, ...options });
    app = await NestFactory.createMicroservice(RequestsModule, { strategy: server, logger });
    await app.listen();
    return app.get(RequestsController);
  };
  const retryClient = (options: Partial<ConstructorParameters<typeof RetryClient>[0]> = {}) => {
    const client = new RetryClient({ url: AMQP_URL, queue, delayedDelivery: false, ...options });
    clients.push(client);
    return client;
  };

  it('answers a stream of values in order, then ends it, to RetryClient and to ClientRMQ', async () => {
    await start();
    expect(await lastValueFrom(retryClient().send('three', {}).pipe(toArray()))).toEqual([1, 2, 3]);
    const nest = new ClientRMQ({ urls: [AMQP_URL], queue, noAssert: true });
    clients.push(nest);
    expect(await lastValueFrom(nest.send('three', {}).pipe(toArray()))).toEqual([1, 2, 3]);
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
    const connectionName = uniqueName('e2e-review-client');
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
    const connectionName = uniqueName('e2e-review-closing');
    const client = new RetryClient({ url: AMQP_URL, queue, connectionName }); // delayed delivery on: it also consumes
    const connecting = client.connect().catch(() => undefined);
    await client.close();
    await connecting;
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // a connection opened late would be up by now
    expect(await connectionsNamed(connectionName)).toEqual([]);
  });

  it('does not have Nest log an RpcException of an event handler as unhandled: the transport retries it', async () => {
    const logger = new RecordingLogger();
    const controller = await start({}, logger);
    await broker.publish('', queue, { pattern: 'rpc.fails', data: 9 });
    await waitFor(() => controller.events.includes(9), 'the second attempt');
    expect(controller.rpcFailures).toEqual([9]);
    expect(logger.lines.filter((line) => line.startsWith('error') && line.includes('expected, retried'))).toEqual([]);
  });
});
