import type { INestApplicationContext, LoggerService } from '@nestjs/common';
import amqp from 'amqplib';
import type { GetMessage } from 'amqplib';
import type { RetryModuleOptions } from 'nestjs-amqp-retry';
import { TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, TestBroker, uniqueName } from '../support/broker.js';

/**
 * The shared frame of the hardening suites: a TestBroker, a fresh queue name per test, and cleanup (the app closed,
 * the retry topology and any extra queues and exchanges deleted).
 */
export interface Suite {
  broker: TestBroker;
  queue: string;
  app?: INestApplicationContext;
  extraQueues: string[];
  extraExchanges: string[];
}

/** Module options of these suites: no delay ladder, and a short shutdown so a stuck handler cannot hold cleanup. */
export const HARDENING_OPTIONS: RetryModuleOptions = { ...TEST_OPTIONS, shutdownTimeout: '2s' };

export function useSuite(prefix: string): Suite {
  const suite: Suite = { broker: undefined as unknown as TestBroker, queue: '', extraQueues: [], extraExchanges: [] };
  beforeAll(async () => {
    suite.broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await suite.broker.close();
  });
  beforeEach(() => {
    suite.queue = uniqueName(prefix);
    suite.extraQueues.length = 0;
    suite.extraExchanges.length = 0;
  });
  afterEach(async () => {
    await suite.app?.close();
    suite.app = undefined;
    await suite.broker.deleteRetryTopology(suite.queue, { queues: suite.extraQueues, exchanges: suite.extraExchanges });
  });
  return suite;
}

/** The headers of a parked copy. */
export const headersOf = (message: GetMessage): Record<string, unknown> => message.properties.headers ?? {};

/**
 * Only for showing that something does NOT happen (no further handler call, no second parked copy): callers first
 * wait for the final state by polling, then give the broker this short, bounded window to do anything more.
 */
export const settleWindow = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether an exchange exists, probed on a connection of its own (a 404 closes the channel it happens on). */
export async function exchangeExists(name: string): Promise<boolean> {
  const connection = await amqp.connect(AMQP_URL);
  try {
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    return await channel.checkExchange(name).then(
      () => true,
      () => false,
    );
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** Keeps what the library logs. */
export class RecordingLogger implements LoggerService {
  readonly lines: string[] = [];
  log = (message: unknown) => this.lines.push(`log ${String(message)}`);
  error = (message: unknown) => this.lines.push(`error ${String(message)}`);
  warn = (message: unknown) => this.lines.push(`warn ${String(message)}`);
  debug = (message: unknown) => this.lines.push(`debug ${String(message)}`);
  verbose = (message: unknown) => this.lines.push(`verbose ${String(message)}`);
}
