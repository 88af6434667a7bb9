import type { INestApplicationContext } from '@nestjs/common';
import type { GetMessage } from 'amqplib';
import type { RetryModuleOptions } from 'nestjs-amqp-retry';
import { TEST_OPTIONS } from './app.js';
import { TestBroker, uniqueName } from './broker.js';

/**
 * The frame of a test file that runs one application per test: a TestBroker, a fresh queue name per test, and
 * cleanup (the app closed, the retry topology and any extra queues and exchanges deleted).
 */
export interface Suite {
  broker: TestBroker;
  queue: string;
  app?: INestApplicationContext;
  extraQueues: string[];
  extraExchanges: string[];
}

/** Module options for such suites: no delay ladder, and a short shutdown so a stuck handler cannot hold cleanup. */
export const SUITE_OPTIONS: RetryModuleOptions = { ...TEST_OPTIONS, shutdownTimeout: '2s' };

export function useSuite(prefix: string): Suite {
  const suite: Suite = { broker: undefined as unknown as TestBroker, queue: '', extraQueues: [], extraExchanges: [] };
  beforeAll(async () => {
    suite.broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await suite.broker?.close();
  });
  beforeEach(() => {
    suite.queue = uniqueName(prefix);
    suite.extraQueues.length = 0;
    suite.extraExchanges.length = 0;
  });
  afterEach(async () => {
    const app = suite.app;
    suite.app = undefined;
    await cleanUp(
      () => app?.close(),
      () => suite.broker.deleteRetryTopology(suite.queue, { queues: suite.extraQueues, exchanges: suite.extraExchanges }),
    );
  });
  return suite;
}

/**
 * For afterAll and finally blocks: runs every step, in order, even when an earlier one throws (a browser that never
 * launched because its beforeAll failed, a table never created), then throws the first failure. Without it, the first
 * step that throws skips the rest, and a broker connection they would have closed keeps the in-band Jest run alive.
 */
export async function cleanUp(...steps: Array<() => unknown>): Promise<void> {
  const failures: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length > 0) throw failures[0];
}

/**
 * Closes a Nest application; should that take longer than 10 s (a shutdown waiting on something), says every 10 s
 * what the process still has open, so that a hook's timeout in CI comes with the evidence of what held it.
 */
export async function closeApp(app: { close(): Promise<void> } | undefined, what: string): Promise<void> {
  if (!app) return;
  const began = Date.now();
  const watch = setInterval(() => {
    const open = process
      .getActiveResourcesInfo()
      .reduce<Record<string, number>>((counts, type) => ({ ...counts, [type]: (counts[type] ?? 0) + 1 }), {});
    console.error(`${what}: app.close() still running after ${Date.now() - began} ms; open: ${JSON.stringify(open)}`);
  }, 10_000);
  try {
    await app.close();
  } finally {
    clearInterval(watch);
  }
}

/** The headers of a message taken from a queue (a parked copy, say). */
export const headersOf = (message: GetMessage): Record<string, unknown> => message.properties.headers ?? {};

/**
 * Only for showing that something does NOT happen (no further handler call, no second parked copy): callers first
 * wait for the final state by polling, then give the broker this short, bounded window to do anything more.
 */
export const settleWindow = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The frame of a test file that publishes to a queue of its own: a TestBroker, and per test a direct exchange with one
 * durable queue bound by key 'k' (uuid names from `prefix`), deleted after the test, its application closed first.
 */
export interface RoutedQueue {
  broker: TestBroker;
  exchange: string;
  queue: string;
  app?: INestApplicationContext;
}

export function useRoutedQueue(prefix: string): RoutedQueue {
  const routed: RoutedQueue = { broker: undefined as unknown as TestBroker, exchange: '', queue: '' };
  beforeAll(async () => {
    routed.broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await routed.broker?.close();
  });
  beforeEach(async () => {
    routed.queue = uniqueName(prefix);
    routed.exchange = uniqueName(`${prefix}.x`);
    await routed.broker.channel.assertExchange(routed.exchange, 'direct', { durable: true });
    await routed.broker.declareQueue(routed.queue, { exchange: routed.exchange, key: 'k' });
  });
  afterEach(async () => {
    const app = routed.app;
    routed.app = undefined;
    await cleanUp(
      () => app?.close(),
      () => routed.broker.channel.deleteQueue(routed.queue),
      () => routed.broker.channel.deleteExchange(routed.exchange),
    );
  });
  return routed;
}
