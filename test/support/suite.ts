import type { INestApplicationContext } from '@nestjs/common';
import type { GetMessage } from 'amqplib';
import type { RetryModuleOptions } from 'nestjs-amqp-retry';
import { TEST_OPTIONS } from './app.js';
import { addUser, addVhost, type BrokerUser, type Vhost } from './broker-access.js';
import { TestBroker, uniqueName } from './broker.js';
import { PrivateBroker } from './private-broker.js';

/**
 * The frame of a test file that runs its applications per test: a TestBroker, a fresh queue name per test, and
 * cleanup after each test (the clients and apps closed, the steps registered with `afterThis` run, the retry topology and any
 * extra queues and exchanges deleted), the broker closed after the file. With `perFile`, one such frame for the whole
 * file. What a test makes on the broker through the suite (ladders, vhosts, users, further handler queues) goes with it.
 */
export interface Suite<App extends Closable = INestApplicationContext> {
  broker: TestBroker;
  /** With the option `privateNode`: the node of the file's own that `broker` is connected to (its `url` for the apps). */
  node?: PrivateBroker;
  queue: string;
  /** The test's application, closed after it. */
  app?: App;
  /** More applications of the test, closed after it in the order they were pushed (after `app`). */
  apps: App[];
  /** The test's clients of its applications (a RetryClient, a ClientRMQ), closed after it before the applications. */
  clients: Closable[];
  extraQueues: string[];
  extraExchanges: string[];
  /** With the option `routed`: the test's direct exchange, its queue bound to it by key 'k'. */
  exchange: string;
  /** A delay ladder prefix of the test's own (a uuid name), its ladder deleted after the test. */
  ladder(): string;
  /**
   * A vhost of the test's own (a uuid name; `args` go to add_vhost), on which the test broker's user may do anything,
   * deleted after the test with everything in it. `url(user, password)` is the AMQP URL of another user there.
   */
  vhost(...args: string[]): Promise<Vhost>;
  /** A user of the test's own (a uuid name) with the permissions configure, write, read on `vhost`, deleted after the test. */
  user(vhost: string, permissions: [string, string, string]): Promise<BrokerUser>;
  /** A further handler queue of the test (by default a uuid name from the suite's prefix), its retry topology deleted after the test. */
  retryQueue(name?: string): string;
  /** Registers a step for the end of this test: it runs after the apps close, before the topology is deleted. */
  afterThis(step: () => unknown): void;
}

export type { BrokerUser, Vhost };

/** What a suite may close after each test: a Nest application or microservice, a client, a proxy. */
export interface Closable {
  close(): unknown;
}

/** How a suite differs from the default. */
export interface SuiteOptions {
  /** Runs before the broker connects, once per file (a precondition such as a broker plugin). */
  requires?: () => Promise<void>;
  /** Queues to delete with the test's retry topology, given its queue (a transport's pattern tiers, say). */
  extraQueues?: (queue: string) => string[];
  /** Deletes the test's topology in place of deleteRetryTopology (partitioned queues, a queue of the test's own). */
  deleteTopology?: (broker: TestBroker, queue: string) => Promise<unknown>;
  /** Steps after the broker closes, once per file (a database pool). */
  afterAll?: () => unknown;
  /**
   * The file's broker is a node of its own (a PrivateBroker, for what must not happen to a broker others use: a
   * restart, an alarm, a setting), started before the broker connects, set up by the function given, stopped after.
   */
  privateNode?: boolean | ((node: PrivateBroker) => Promise<unknown>);
  /**
   * The frame (queue, apps, clients, steps, extra names) is the file's, not each test's: made before its first test,
   * cleaned up after its last, for applications that every test of the file shares.
   */
  perFile?: boolean;
  /** Per test, a direct exchange (`exchange`) and the test's queue, declared durable and bound to it by key 'k'. */
  routed?: boolean;
}

/** Module options for such suites: no delay ladder, and a short shutdown so a stuck handler cannot hold cleanup. */
export const SUITE_OPTIONS: RetryModuleOptions = { ...TEST_OPTIONS, shutdownTimeout: '2s' };

export function useSuite<App extends Closable = INestApplicationContext>(prefix: string, options: SuiteOptions = {}): Suite<App> {
  const pending: Array<() => unknown> = [];
  const suite: Suite<App> = {
    broker: undefined as unknown as TestBroker,
    queue: '',
    apps: [],
    clients: [],
    extraQueues: [],
    extraExchanges: [],
    exchange: '',
    ladder: () => {
      const ladder = uniqueName(`${prefix}.delay`);
      pending.push(() => suite.broker.deleteDelayLadder(ladder));
      return ladder;
    },
    vhost: (...args) => addVhost(uniqueName(`${prefix}.vhost`), args, (remove) => pending.push(remove)),
    user: (vhost, permissions) => addUser(uniqueName(`${prefix}.user`), vhost, permissions, (remove) => pending.push(remove)),
    retryQueue: (name = uniqueName(prefix)) => {
      pending.push(() => suite.broker.deleteRetryTopology(name));
      return name;
    },
    afterThis: (step) => void pending.push(step),
  };
  /** Opens the frame of a test (of the file, with `perFile`). */
  const begin = async () => {
    suite.queue = uniqueName(prefix);
    suite.apps = [];
    suite.clients = [];
    suite.extraQueues.length = 0;
    suite.extraExchanges.length = 0;
    pending.length = 0;
    if (options.routed) {
      suite.exchange = uniqueName(`${prefix}.x`);
      suite.extraExchanges.push(suite.exchange);
      await suite.broker.channel.assertExchange(suite.exchange, 'direct', { durable: true });
      await suite.broker.declareQueue(suite.queue, { exchange: suite.exchange, key: 'k' });
    }
  };
  /** Closes it: clients, then apps, then the registered steps, then the topology. */
  const end = async () => {
    const apps = [suite.app, ...suite.apps];
    suite.app = undefined;
    const queues = () => [...(options.extraQueues?.(suite.queue) ?? []), ...suite.extraQueues];
    await cleanUp(
      ...suite.clients.splice(0).map((client) => () => client.close()),
      ...apps.map((app) => () => closeApp(app, prefix)),
      ...pending.splice(0),
      options.deleteTopology
        ? () => options.deleteTopology!(suite.broker, suite.queue)
        : () => suite.broker.deleteRetryTopology(suite.queue, { queues: queues(), exchanges: suite.extraExchanges }),
    );
  };
  const { privateNode, perFile } = options;
  // A private node starts in seconds, or in 1-2 minutes the first time a 4.x chroot is made.
  beforeAll(
    async () => {
      await options.requires?.();
      if (privateNode) {
        suite.node = await PrivateBroker.start();
        if (typeof privateNode === 'function') await privateNode(suite.node);
      }
      suite.broker = await TestBroker.connect(suite.node?.url);
      if (perFile) await begin();
    },
    privateNode ? 600_000 : undefined,
  );
  afterAll(
    async () => {
      await cleanUp(
        () => (perFile && suite.broker ? end() : undefined),
        () => suite.broker?.close(),
        () => suite.node?.stop(),
        () => options.afterAll?.(),
      );
    },
    privateNode ? 120_000 : undefined,
  );
  if (!perFile) {
    beforeEach(begin);
    afterEach(end);
  }
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
export async function closeApp(app: Closable | undefined, what: string): Promise<void> {
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
