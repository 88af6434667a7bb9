import { Catch, Controller, Injectable, Module, type ExceptionFilter, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { of, throwError } from 'rxjs';
import { RetryEngine, RetryModule, RetryWithBackoff } from 'nestjs-amqp-retry';
import { RetryRpcExceptionFilter, RetryServer } from 'nestjs-amqp-retry/transport';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { settleWindow, useSuite } from '../support/suite.js';

/** What a global filter does with every error: answers a failure in some form, or marks the message handled. */
const FILTERS: Record<string, { filter?: () => ExceptionFilter; handled: boolean }> = {
  'no filter': { handled: false },
  RetryRpcExceptionFilter: { filter: () => new RetryRpcExceptionFilter(), handled: false },
  'a filter that only logs (answers nothing)': { filter: () => catching(() => undefined), handled: false },
  'a filter answering throwError': { filter: () => catching(() => throwError(() => new Error('still failed'))), handled: false },
  'a filter answering a rejected Promise': { filter: () => catching(() => Promise.reject(new Error('still failed'))), handled: false },
  // Nest's RPC rule (RpcExceptionsHandler): an answer that is falsy is no answer, Nest's default follows
  'a filter answering false': { filter: () => catching(() => false), handled: false },
  'a filter answering 0': { filter: () => catching(() => 0), handled: false },
  "a filter answering ''": { filter: () => catching(() => ''), handled: false },
  'a filter answering a value': { filter: () => catching(() => ({ handled: true })), handled: true },
  'a filter answering of(value)': { filter: () => catching(() => of({ handled: true })), handled: true },
};

function catching(answer: () => unknown): ExceptionFilter {
  @Catch()
  class AnsweringFilter implements ExceptionFilter {
    catch(): unknown {
      return answer();
    }
  }
  return new AnsweringFilter();
}

/** A hybrid application whose @RetryWithBackoff handler and @EventPattern handler always throw. */
function hybridModule(decoratorQueue: string) {
  @Injectable()
  class FailingHandler {
    calls = 0;
    @RetryWithBackoff({ queue: decoratorQueue, delays: ['300ms'], maxAttempts: 2 })
    handle(): void {
      this.calls++;
      throw new Error('the handler failed');
    }
  }
  @Controller()
  class FailingController {
    calls = 0;
    @EventPattern('invoice.issued')
    issued(@Payload() _invoice: unknown): void {
      this.calls++;
      throw new Error('the handler failed');
    }
  }
  @Module({
    imports: [RetryModule.forRoot({ url: AMQP_URL, delayedDelivery: false, shutdownTimeout: '2s' })],
    providers: [FailingHandler],
    controllers: [FailingController],
  })
  class HybridModule {}
  return { HybridModule, FailingHandler, FailingController };
}

/**
 * The rule of docs/retries-and-parking.md: a global exception filter that returns a value other than a falsy one (or
 * a stream that completes) marks a failed message handled; one whose answer fails (a throw, an Observable or a Promise that errors) leaves it
 * failed, retried then parked. The same on both paths, the decorator's and RetryServer's, in one hybrid application.
 */
describe('global exception filters on failed handlers, decorator and transport alike', () => {
  const suite = useSuite<INestApplication>('e2e.filters.decorator');
  let transportQueue: string;

  beforeEach(() => {
    transportQueue = suite.retryQueue(uniqueName('e2e.filters.transport'));
  });

  it.each(Object.entries(FILTERS))('%s', async (_name, { filter, handled }) => {
    const { HybridModule, FailingHandler, FailingController } = hybridModule(suite.queue);
    suite.app = await NestFactory.create(HybridModule, { logger: false });
    if (filter) suite.app.useGlobalFilters(filter());
    const server = new RetryServer({ queue: transportQueue, engine: suite.app.get(RetryEngine), delays: [300], maxAttempts: 2 });
    suite.app.connectMicroservice({ strategy: server }, { inheritAppConfig: true });
    await suite.app.startAllMicroservices();
    await suite.app.init();
    const decorated = suite.app.get(FailingHandler);
    const patterns = suite.app.get(FailingController);

    await suite.broker.publish('', suite.queue, { id: 1 });
    await suite.broker.publish('', transportQueue, { pattern: 'invoice.issued', data: { id: 2 } });
    const expected = handled ? { calls: 1, parked: 0 } : { calls: 2, parked: 1 };
    const outcome = async () => ({
      decorator: { calls: decorated.calls, parked: await suite.broker.count(`${suite.queue}.error`), waiting: await suite.broker.count(suite.queue) },
      transport: {
        calls: patterns.calls,
        parked: await suite.broker.count(`${transportQueue}.error`),
        waiting: await suite.broker.count(transportQueue),
      },
    });
    const settled = { ...expected, waiting: 0 };
    await waitFor(
      async () => JSON.stringify(await outcome()) === JSON.stringify({ decorator: settled, transport: settled }),
      `each handler called ${expected.calls} time(s), ${expected.parked} parked`,
    );
    await settleWindow(700); // past the 300 ms tier: a retry of a handled message would have run by now
    expect(await outcome()).toEqual({ decorator: settled, transport: settled });
  });
});
