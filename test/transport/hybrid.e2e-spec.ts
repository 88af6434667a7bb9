import { Controller, Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import {
  ParkedMessages,
  RetryEngine,
  RetryModule,
  RetryPublisher,
  retryTopologyNames,
  RetryWithBackoff,
  type IdempotencyStore,
  type RetryContext,
} from 'nestjs-amqp-retry';
import { RetryClient, RetryRmqContext, RetryServer } from 'nestjs-amqp-retry/transport';
import { connectionsNamed } from '../support/broker-control.js';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { useSuite } from '../support/suite.js';

const decoratorQueue = uniqueName('e2e.hybrid.decorator');
const transportQueue = uniqueName('e2e.hybrid.transport');
const connectionName = uniqueName('e2e-hybrid');

@Injectable()
class DecoratedHandler {
  readonly attempts: number[] = [];

  @RetryWithBackoff({ queue: decoratorQueue, delays: [150], maxAttempts: 2 })
  handle(_payload: unknown, context: RetryContext): void {
    this.attempts.push(context.attempt);
    if (context.attempt === 1) throw new Error('first attempt fails');
  }
}

@Controller()
class PatternController {
  readonly attempts: number[] = [];

  @EventPattern<string>('invoice.issued', { retry: { delays: [150], maxAttempts: 2 } })
  issued(@Payload() _invoice: unknown, @Ctx() ctx: RetryRmqContext): void {
    this.attempts.push(ctx.getRetryContext().attempt);
    if (ctx.getRetryContext().attempt === 1) throw new Error('first attempt fails');
  }
}

@Module({
  imports: [RetryModule.forRoot({ url: AMQP_URL, delayedDelivery: false, connectionName })],
  providers: [DecoratedHandler],
  controllers: [PatternController],
})
class HybridModule {}

describe('a hybrid application: @RetryWithBackoff handlers and @EventPattern handlers', () => {
  // The handlers' queues are named where their classes are declared: the suite deletes their topology.
  const suite = useSuite<INestApplication>('e2e.hybrid');

  it("shares the module's connections, and retries both kinds of handler", async () => {
    const { broker } = suite;
    suite.retryQueue(decoratorQueue);
    suite.retryQueue(transportQueue);
    suite.extraQueues.push(...retryTopologyNames(transportQueue, { delays: [150] }).tiers); // the pattern's own schedule
    const logger = new RecordingLogger();
    const app = (suite.app = await NestFactory.create(HybridModule, { logger }));
    const engine = app.get(RetryEngine);
    // The transport's store, attached before the module's init: it must still be closed with the engine.
    let storeClosed = 0;
    const store: IdempotencyStore = {
      claim: async () => 'claimed',
      renew: async () => true,
      release: async () => undefined,
      markHandled: async () => undefined,
      close: async () => void storeClosed++,
    };
    const server = new RetryServer({ queue: transportQueue, engine, idempotency: { store } });
    app.connectMicroservice({ strategy: server }, { inheritAppConfig: true });
    await app.startAllMicroservices();
    await app.init();
    expect(server.unwrap<RetryEngine>()).toBe(engine);

    await app.get(RetryPublisher).publish('', decoratorQueue, { id: 1 });
    const client = new RetryClient({ url: AMQP_URL, queue: transportQueue, delayedDelivery: false });
    try {
      await lastValueFrom(client.emit('invoice.issued', { id: 2 }), { defaultValue: undefined });
    } finally {
      await client.close();
    }
    const decorated = app.get(DecoratedHandler);
    const patterns = app.get(PatternController);
    await waitFor(() => decorated.attempts.length === 2 && patterns.attempts.length === 2, 'both handlers retried once');
    expect(decorated.attempts).toEqual([1, 2]);
    expect(patterns.attempts).toEqual([1, 2]);
    // The start line tells the policy each message gets: the server's, and the pattern's own (not only the server's).
    expect(logger.matching(new RegExp(`Consuming "${transportQueue}"`)).map(({ line }) => line)).toEqual([
      `log Consuming "${transportQueue}": 4 attempts, retries after 1s, 10s, 1m, parking in "${transportQueue}.error"; ` +
        'pattern "invoice.issued": 2 attempts, retries after 150ms',
    ]);
    // The pattern's own tier is one of the queue's tiers for the page and ParkedMessages (its messages wait there).
    const states = await app.get(ParkedMessages).queues();
    const transport = states.find((state) => state.queue === transportQueue);
    expect(transport?.tiers.map((tier) => tier.queue)).toContain(retryTopologyNames(transportQueue, { delays: [150] }).tiers[0]);
    // One pair of connections for both: the module's consuming and publishing ones.
    expect((await connectionsNamed(connectionName)).sort()).toEqual([`${connectionName} consume`, `${connectionName} publish`]);

    await app.close();
    suite.app = undefined;
    expect(await broker.consumers(transportQueue)).toBe(0);
    expect(storeClosed).toBe(1);
    expect(await broker.count(`${transportQueue}.error`)).toBe(0);
  });
});

const sharedQueue = uniqueName('e2e.hybrid.shared');

@Injectable()
class SharedQueueHandler {
  @RetryWithBackoff({ queue: sharedQueue, delays: [100], maxAttempts: 2 })
  handle(): void {}
}

@Module({ imports: [RetryModule.forRoot({ url: AMQP_URL, delayedDelivery: false })], providers: [SharedQueueHandler] })
class SharedQueueModule {}

describe("a hybrid application whose transport queue is a decorator handler's", () => {
  const suite = useSuite('e2e.hybrid.shared');

  for (const order of ['microservices first', 'init first'] as const) {
    it(`refuses to start, naming the queue (${order})`, async () => {
      const hybrid = await NestFactory.create(SharedQueueModule, { logger: false });
      suite.afterThis(() => hybrid.close().catch(() => undefined)); // a refused start may fail its close too
      suite.retryQueue(sharedQueue);
      hybrid.connectMicroservice({ strategy: new RetryServer({ queue: sharedQueue, engine: hybrid.get(RetryEngine) }) });
      const starting =
        order === 'microservices first'
          ? hybrid.startAllMicroservices().then(() => hybrid.init())
          : hybrid.init().then(() => hybrid.startAllMicroservices());
      await expect(starting).rejects.toThrow(/SharedQueueHandler\.handle is "e2e\.hybrid\.shared\.\w+", which RetryServer/);
    });
  }
});
