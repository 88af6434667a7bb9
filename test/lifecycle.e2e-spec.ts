import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
  Catch,
  type ExceptionFilter,
  type ArgumentsHost,
} from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { Module, Scope, type LoggerService } from '@nestjs/common';
import { PublishError, RetryModule, RetryPublisher, RetryWithBackoff, type RetryContext } from 'nestjs-amqp-retry';
import { tap } from 'rxjs';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from './support/app.js';
import { tierQueues } from '../libs/amqp-retry/src/core/retry-topology.plan.js';
import { TestBroker, uniqueName, waitFor } from './support/broker.js';

describe('application lifecycle and Nest integration', () => {
  let broker: TestBroker;
  let queue: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await broker.close();
  });
  beforeEach(() => {
    queue = uniqueName('e2e.life');
  });
  afterEach(async () => {
    await broker.deleteRetryTopology(queue);
  });

  it('keeps a message waiting in a tier across a restart of the app, and delivers it as attempt 2', async () => {
    const Failing = handlerFor({ queue, delays: ['1500ms'] }, () => {
      throw new Error('down');
    });
    const first = await startApp([Failing]);
    await broker.publish('', queue, { id: 1 });
    await waitFor(async () => (await broker.count(tierQueues({ queue, delaysMs: [1_500] })[0])) === 1, 'the message in tier 1');
    await first.close();

    const Healthy = handlerFor({ queue, delays: ['1500ms'] }, () => undefined);
    const second = await startApp([Healthy]);
    try {
      const calls = handlerOf(second, Healthy).calls;
      await waitFor(() => calls.length === 1, 'the retry after the restart', 5_000);
      expect(calls[0]).toMatchObject({ payload: { id: 1 }, attempt: 2 });
      expect(await broker.count(`${queue}.error`)).toBe(0);
    } finally {
      await second.close();
    }
  });

  it('lets app.close() finish a handler in flight and ack it; nothing is left behind', async () => {
    let finished = false;
    const Slow = handlerFor({ queue }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      finished = true;
    });
    const app = await startApp([Slow]);
    await broker.publish('', queue, { id: 2 });
    await waitFor(() => handlerOf(app, Slow).calls.length === 1, 'the handler to start');
    await app.close();
    expect(finished).toBe(true);
    expect(await broker.count(queue)).toBe(0);
  });

  it('runs handlers through the app interceptors and exception filters, with an rpc context', async () => {
    const seen: string[] = [];
    @Injectable()
    class RecordingInterceptor implements NestInterceptor {
      intercept(context: ExecutionContext, next: CallHandler) {
        const rpc = context.switchToRpc();
        seen.push(`${context.getType()}:${JSON.stringify(rpc.getData())}:attempt ${rpc.getContext<RetryContext>().attempt}`);
        return next.handle().pipe(tap({ error: (e: Error) => seen.push(`error:${e.message}`) }));
      }
    }
    @Catch()
    class SwallowingFilter implements ExceptionFilter {
      catch(exception: Error, host: ArgumentsHost) {
        seen.push(`filter:${exception.message}:${host.getType()}`);
        return { handled: true }; // a filter that returns a value instead of rethrowing marks the message handled
      }
    }
    const Handler = handlerFor({ queue }, () => {
      throw new Error('boom');
    });
    const app = await startApp([
      Handler,
      { provide: APP_INTERCEPTOR, useClass: RecordingInterceptor },
      { provide: APP_FILTER, useClass: SwallowingFilter },
    ]);
    try {
      await broker.publish('', queue, { id: 3 });
      await waitFor(() => seen.length === 3, 'interceptor and filter');
      expect(seen).toEqual(['rpc:{"id":3}:attempt 1', 'error:boom', 'filter:boom:rpc']);
      await waitFor(async () => (await broker.count(queue)) === 0, 'the ack');
      expect(await broker.count(tierQueues({ queue, delaysMs: [1_000, 10_000, 60_000] })[0])).toBe(0); // no retry either (module default tiers)
      expect(handlerOf(app, Handler).calls).toHaveLength(1);
    } finally {
      await app.close();
    }
  });

  it('runs two applications in one process, each with its own handlers and connection', async () => {
    const other = uniqueName('e2e.life');
    const A = handlerFor({ queue }, () => undefined);
    const B = handlerFor({ queue: other }, () => undefined);
    const [appA, appB] = await Promise.all([startApp([A]), startApp([B])]);
    try {
      await broker.publish('', queue, { to: 'a' });
      await broker.publish('', other, { to: 'b' });
      await waitFor(() => handlerOf(appA, A).calls.length === 1 && handlerOf(appB, B).calls.length === 1, 'both handlers');
      expect(handlerOf(appA, A).calls[0].payload).toEqual({ to: 'a' });
      expect(handlerOf(appB, B).calls[0].payload).toEqual({ to: 'b' });
    } finally {
      await Promise.all([appA.close(), appB.close()]);
      await broker.deleteRetryTopology(other);
    }
  });

  it('takes its options from forRootAsync with an injected factory', async () => {
    const SETTINGS = Symbol('settings');
    @Module({ providers: [{ provide: SETTINGS, useValue: { ...TEST_OPTIONS, delays: ['100ms'] } }], exports: [SETTINGS] })
    class SettingsModule {}
    const Handler = handlerFor({ queue, maxAttempts: 2 }, (_, ctx) => {
      if (ctx.attempt === 1) throw new Error('once');
    });
    const app = await Test.createTestingModule({
      imports: [
        RetryModule.forRootAsync({
          imports: [SettingsModule],
          inject: [SETTINGS],
          useFactory: (settings: { url: string; delays: string[] }) => settings,
        }),
      ],
      providers: [Handler],
    }).compile();
    app.useLogger(false);
    await app.init();
    try {
      await broker.publish('', queue, { id: 9 });
      await waitFor(() => handlerOf(app, Handler).calls.length === 2, 'the retry');
      const [first, second] = handlerOf(app, Handler).calls;
      expect(second.at - first.at).toBeGreaterThanOrEqual(95);
      expect(second.at - first.at).toBeLessThan(1_000); // the module default (1s) would be later
    } finally {
      await app.close();
    }
  });

  it('warns about a request-scoped handler instead of ignoring it silently', async () => {
    const warnings: string[] = [];
    const logger: LoggerService = { log: () => undefined, error: () => undefined, warn: (m: unknown) => warnings.push(String(m)) };
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {
      @RetryWithBackoff({ queue })
      handle(): void {}
    }
    const app = await Test.createTestingModule({ imports: [RetryModule.forRoot(TEST_OPTIONS)], providers: [PerRequest] }).compile();
    app.useLogger(logger);
    await app.init();
    await app.close();
    expect(warnings).toEqual(['PerRequest.handle is request-scoped or depends on a request-scoped provider; @RetryWithBackoff ignores it']);
    expect(await broker.exists(queue)).toBe(false);
  });

  it('RetryPublisher resolves on confirm with JSON, persistent, a message id, and rejects an unroutable publish', async () => {
    const Handler = handlerFor({ queue }, () => undefined);
    const app = await startApp([Handler]);
    try {
      const publisher = app.get(RetryPublisher);
      await publisher.publish('', queue, { id: 4 }, { headers: { tenant: 'acme' } });
      await waitFor(() => handlerOf(app, Handler).calls.length === 1, 'the handler call');
      const { properties } = handlerOf(app, Handler).calls[0];
      expect(properties).toMatchObject({ contentType: 'application/json', deliveryMode: 2, headers: { tenant: 'acme' } });
      expect(properties.messageId).toMatch(/^[0-9a-f-]{36}$/);
      await expect(publisher.publish('', uniqueName('nowhere'), { id: 5 })).rejects.toThrow(PublishError);
      await expect(publisher.publish('', uniqueName('nowhere'), { id: 5 })).rejects.toThrow(/returned as unroutable/);
      await expect(publisher.publish(uniqueName('no-exchange'), 'k', { id: 6 })).rejects.toThrow(/closed the channel over it .*NOT_FOUND/);
      await expect(publisher.publish('', queue, undefined)).rejects.toThrow(
        'RetryPublisher.publish: a payload of type undefined has no JSON form; publish an object, array, string, number, boolean or null',
      );
      await publisher.publish('', queue, { id: 7 }); // the module's channel survived the failures
      await waitFor(() => handlerOf(app, Handler).calls.length === 2, 'the second call');
    } finally {
      await app.close();
    }
  });
});
