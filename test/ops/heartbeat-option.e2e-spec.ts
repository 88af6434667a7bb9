import type { INestApplication, INestApplicationContext, INestMicroservice } from '@nestjs/common';
import { RetryPublisher } from 'nestjs-amqp-retry';
import { handlerFor, startApp } from '../support/app.js';
import { uniqueName, waitFor } from '../support/broker.js';
import { BearerGuard, OPERATOR_AUTHORIZATION, startDashboardApp } from '../support/dashboard-app.js';
import { SUITE_OPTIONS, useSuite } from '../support/suite.js';
import { patternTiers, startRetryMicroservice } from '../transport/transport-app.js';

interface Fleet {
  instances: Array<{
    id: string;
    status: 'up' | 'gone';
    intervalMs: number;
    queues: Array<{ queue: string; consuming: boolean; handled: number; breaker?: { reason: string; error: string } }>;
  }>;
  summary: { up: number; gone: number };
}

const INTERVAL_MS = 400;

/**
 * RetryModuleOptions.heartbeat: an instance that does not import the page (a worker, a microservice) beats, so that the
 * page served by another instance of the application shows it, its queues and its counts.
 */
describe('the heartbeat option: instances without the page in the console', () => {
  const suite = useSuite<INestApplication>('e2e.beat', { extraQueues: patternTiers });
  const others: Array<INestApplicationContext | INestMicroservice> = [];
  let serviceQueue: string;

  beforeEach(() => {
    serviceQueue = uniqueName('e2e.beat.service');
    suite.afterThis(async () => {
      await Promise.all(others.splice(0).map((app) => app.close()));
      await suite.broker.deleteRetryTopology(serviceQueue, { queues: patternTiers(serviceQueue) });
    });
  });

  const fleetOf = async (url: string): Promise<Fleet> => {
    const response = await fetch(`${url}/retry/api/fleet`, { headers: { authorization: OPERATOR_AUTHORIZATION } });
    expect(response.status).toBe(200);
    return (await response.json()) as Fleet;
  };

  /** An instance that serves the page (guarded, beating every INTERVAL_MS), as the suite's app. */
  const startPage = async (providers: Parameters<typeof startDashboardApp>[0], moduleOptions: typeof SUITE_OPTIONS) => {
    const page = await startDashboardApp(
      providers,
      { path: '/retry', guard: BearerGuard, heartbeatIntervalMs: INTERVAL_MS },
      undefined,
      undefined,
      moduleOptions,
    );
    suite.app = page.app;
    return page;
  };

  it('shows a worker and a microservice that beat, with their queues and what they handled, beside the page instance', async () => {
    const application = uniqueName('e2e-beat-app');
    const options = { ...SUITE_OPTIONS, application };
    const Handler = handlerFor({ queue: suite.queue, delays: [100] }, () => undefined);
    const page = await startPage([Handler], options);
    const Worker = handlerFor({ queue: suite.queue, delays: [100] }, () => undefined);
    const worker = await startApp([Worker], { ...options, heartbeat: { intervalMs: INTERVAL_MS } });
    others.push(worker);
    others.push(await startRetryMicroservice({ queue: serviceQueue, application, heartbeat: { intervalMs: INTERVAL_MS } }));

    await waitFor(async () => (await fleetOf(page.url)).summary.up === 3, 'the page, the worker and the microservice up', 10_000);
    for (let i = 0; i < 10; i++) await worker.get(RetryPublisher).publish('', suite.queue, { i });
    await waitFor(async () => {
      const { instances } = await fleetOf(page.url);
      const handled = instances.flatMap((i) => i.queues).filter((q) => q.queue === suite.queue);
      return handled.length === 2 && handled.every((q) => q.consuming);
    }, 'both consumers of the queue in the fleet');
    // The microservice's queue is not the page instance's: the page finds it recorded under the application in the handler registry.
    await waitFor(
      async () => (await fleetOf(page.url)).instances.some((i) => i.queues.some((q) => q.queue === serviceQueue && q.consuming)),
      "the microservice's queue in the fleet",
      10_000,
    );
    const { instances } = await fleetOf(page.url);
    expect(instances.every((i) => i.status === 'up' && i.intervalMs === INTERVAL_MS)).toBe(true);
    expect(instances.filter((i) => i.queues.some((q) => q.queue === serviceQueue && q.consuming))).toHaveLength(1);
  });

  it('names the error of a breaker opened by calls that failed side by side, before any of their failures was settled', async () => {
    // Five calls in flight fail in the same turn: the breaker counts three and opens before the pipeline settles any.
    const inFlight: Array<() => void> = [];
    const Handler = handlerFor(
      { queue: suite.queue, delays: ['10s'], prefetch: 10, circuitBreaker: { consecutiveFailures: 3, openFor: '1m' } },
      () =>
        new Promise<void>((_resolve, reject) => {
          inFlight.push(() => reject(new Error('connect ECONNREFUSED 10.0.0.9:443')));
          if (inFlight.length === 5) for (const fail of inFlight.splice(0)) fail();
        }),
    );
    const page = await startPage([Handler], SUITE_OPTIONS);
    for (let i = 0; i < 5; i++) await page.app.get(RetryPublisher).publish('', suite.queue, { i });
    const breaker = await waitFor(async () => {
      const queues = (await fleetOf(page.url)).instances.flatMap((i) => i.queues);
      return queues.find((q) => q.queue === suite.queue)?.breaker;
    }, 'the open breaker in the fleet');
    expect(breaker).toMatchObject({ reason: expect.stringMatching(/3 calls in a row failed/), error: 'connect ECONNREFUSED 10.0.0.9:443' });
  });

  it('refuses a heartbeat interval out of range at start, naming the option', async () => {
    const Handler = handlerFor({ queue: suite.queue }, () => undefined);
    await expect(startApp([Handler], { ...SUITE_OPTIONS, heartbeat: { intervalMs: 100 } })).rejects.toThrow(
      'RetryModule option "heartbeat.intervalMs" is 100. Give true (a beat every 5000 ms), false, or { intervalMs }',
    );
  });
});
