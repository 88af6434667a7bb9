import { Injectable, Module, Scope, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { PublishError, RetryModule, RetryPublisher, retryTopologyNames, RetryWithBackoff } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

describe('application lifecycle and Nest integration', () => {
  const suite = useSuite('e2e.life');

  it('keeps a message waiting in a tier across a restart of the app, and delivers it as attempt 2', async () => {
    const { broker, queue } = suite;
    const Failing = handlerFor({ queue, delays: ['1500ms'] }, () => {
      throw new Error('down');
    });
    const first = await startApp([Failing]);
    await broker.publish('', queue, { id: 1 });
    await waitFor(async () => (await broker.count(retryTopologyNames(queue, { delays: [1_500] }).tiers[0])) === 1, 'the message in tier 1');
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

  it('runs two applications in one process, each with its own handlers and connection', async () => {
    const { broker, queue } = suite;
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
    const { broker, queue } = suite;
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
    const { broker, queue } = suite;
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
    const { queue } = suite;
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
