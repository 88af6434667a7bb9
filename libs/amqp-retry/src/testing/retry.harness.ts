import type { INestApplication, INestApplicationContext, LoggerService, LogLevel, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { ChannelModel, Options } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { replaceBrokerConnect } from '../amqp/broker.connector.js';
import { CONTROL_EXCHANGE } from '../core/breaker/control.message.js';
import { HANDLER_REGISTRY_QUEUE } from '../core/topology/handler-registry.record.js';
import { parseDuration, type Duration } from '../core/time/duration.reader.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import { RetryEngine } from '../engine/retry.engine.js';
import { HarnessFailures } from './harness.failures.js';
import { HarnessRecorder, readBody, type HarnessAttempt, type HarnessHandled } from './harness.records.js';
import { deathRulesOf, deliveredHeaders } from './dead-letter.rules.js';
import { keepsDeliveryCounts } from '../core/delivery/delivery.count.js';
import { MemoryBroker } from './memory.broker.js';
import type { PublishRecord } from './memory.channel.js';
import { MemoryConnection } from './memory.connection.js';
import { publishedMessage, publishedProperties } from './message.shape.js';
import { DEFAULT_REAL_PATIENCE_MS, HarnessDriver } from './harness.driver.js';
import { VirtualClock } from './virtual.clock.js';

/** A transport strategy to connect as a microservice of the application (the transport's `RetryServer`). */
export interface HarnessMicroservice {
  /** Starts it (Nest calls it). */
  listen(callback: () => void): unknown;
  /** Stops it (Nest calls it). */
  close(): unknown;
}

/**
 * A module being built for a test, as `@nestjs/testing`'s `Test.createTestingModule(...)` returns it (with its
 * `overrideProvider` calls made): the harness compiles it once the in-memory broker is in place.
 */
export interface HarnessModuleBuilder {
  /** Builds the module (the harness calls it once the in-memory broker is in place). */
  compile(): Promise<HarnessCompiledModule>;
}

/** What `compile()` gives (`@nestjs/testing`'s TestingModule), as far as the harness uses it. */
export interface HarnessCompiledModule extends INestApplicationContext {
  /** An application of the module, for one with microservices. */
  createNestApplication(): INestApplication;
}

/** How the harness starts the application. */
export interface RetryHarnessOptions {
  /**
   * The microservices a hybrid application connects (as its `main.ts` would), given the application: e.g.
   * `(app) => [new RetryServer({ queue: 'shipping', engine: app.get(RetryEngine) })]`. With any, the application is
   * made with `NestFactory.create` (an HTTP adapter such as `@nestjs/platform-express` must be installed; it does
   * not listen); without, as an application context.
   */
  microservices?: (app: INestApplicationContext) => HarnessMicroservice[];
  /** Where the virtual clock starts (default: the real time now). */
  startAt?: Date | number;
  /** Nest's logger option (default: errors only, so that retries and parking do not fill the test's output); false: none. */
  logger?: LoggerService | LogLevel[] | false;
  /**
   * The RabbitMQ version the in-memory broker says it is and whose dead-lettering it follows (default 4.1.0): from
   * 3.13 on, `x-death` entries move to the front when counted, `x-last-death-*` headers are written and a client's
   * `x-death` is ignored; before 3.13 (e.g. '3.10.8') the broker follows 3.10's observed behaviour instead. What is
   * not a version (major.minor, with or without a patch and a suffix) fails the start with a TypeError naming this option.
   */
  brokerVersion?: string;
  /**
   * How long (real time) a handler that waits for real I/O of its own is waited for while nothing else moves, by
   * `settle`, `advance`, `start` and `close` (default '2s', inside Jest's default timeout of 5 s for a test or hook):
   * past it `settle` fails naming what is stuck, and the others stop holding the clock for it. Raise it for handlers
   * whose real I/O (a database, an HTTP call) takes longer, together with Jest's timeout.
   */
  realIoPatience?: Duration;
}

/** A message parked in an error queue, as the harness reads it (it stays there). */
export interface HarnessParked {
  /** The message's `messageId` property. */
  messageId?: string;
  /** `x-parked-reason`: exhausted, non-retryable, malformed, expired, ... */
  reason?: string;
  /** `x-exception-message`. */
  error?: string;
  /** The body, parsed as JSON when it is JSON. */
  body: unknown;
  /** The body as bytes. */
  content: Buffer;
  /** Every header of the parked copy (the library's `x-parked-*`, `x-original-*`, `x-retry-attempts`, `x-death`, ...). */
  headers: Record<string, unknown>;
  /** Its properties as amqplib gives them (`headers` included). */
  properties: Record<string, unknown>;
}

/** One publish as the broker saw it: by the application (the library on its behalf), or by the harness. */
export interface HarnessPublished extends PublishRecord {
  /** `body` parsed as JSON when it is JSON. */
  body: unknown;
  /** Who published it: the application (the library for it), or the test through `harness.publish`. */
  by: 'application' | 'harness';
}

/** What `harness.publish` returns. */
export interface HarnessPublishReceipt {
  /** The message's id: the one given, or a new UUID. */
  messageId: string;
  /** The queues that took it (none: unroutable). */
  queues: string[];
}

/** A queue's state in the in-memory broker. */
export interface HarnessQueueState {
  /** Messages ready for delivery. */
  messages: number;
  /** Messages delivered and not yet acknowledged. */
  unacknowledged: number;
  /** Consumers. */
  consumers: number;
}

/** The properties `harness.publish` accepts: amqplib's publish options. */
export type HarnessPublishProperties = Options.Publish;

/** A duration as the library reads one, or several run together ('1h30m', '29m59s'). */
const ms = (duration: Duration): number => {
  const compound = typeof duration === 'string' && /^(\s*\d+(?:\.\d+)?\s*[a-z]+){2,}\s*$/i.test(duration);
  const parts = compound ? (duration.match(/\d+(?:\.\d+)?\s*[a-z]+/gi) ?? []) : [duration];
  const values = parts.map((part) => parseDuration(part));
  if (values.includes(undefined))
    throw new Error(`harness: "${String(duration)}" is no duration: give milliseconds or a string such as '10s', '5m', '1h'`);
  return (values as number[]).reduce((sum, value) => sum + value, 0);
};

/** The library's own bookkeeping publishes, left out of `published()`. */
const bookkeeping = (record: PublishRecord) =>
  record.exchange === CONTROL_EXCHANGE ||
  (record.exchange === '' && (record.routingKey === HANDLER_REGISTRY_QUEUE || record.routingKey.endsWith('.retry.plan')));

/** Connects a hybrid application's microservices and starts them, then the application, as its `main.ts` would. */
async function startHybrid(app: INestApplication, options: RetryHarnessOptions): Promise<INestApplicationContext> {
  // Called on the options, as given: a `microservices()` written as a method keeps its `this`.
  for (const strategy of options.microservices?.(app) ?? []) app.connectMicroservice({ strategy }, { inheritAppConfig: true });
  await app.startAllMicroservices();
  return app.init();
}

/**
 * Runs the application's own Nest module (its handlers, its `RetryModule.forRoot` options, its transport) on an
 * in-memory RabbitMQ and a virtual clock: the library's real delivery chain makes its real decisions, and time passes
 * only when the test says so. See docs/testing-your-handlers.md.
 *
 * @example
 * const harness = await RetryHarness.start(AppModule);
 * const { messageId } = harness.publish('orders', 'order.created', { id: 1 });
 * await harness.advance('1h');
 * expect(harness.attempts(messageId).map((a) => a.outcome)).toEqual(['retried', 'retried', 'handled']);
 * await harness.close();
 */
export class RetryHarness {
  /** The failures a test can inject: confirms refused, connections lost or refused. */
  readonly failures: HarnessFailures;
  private readonly recorder: HarnessRecorder;
  private readonly connections: MemoryConnection[] = [];
  private readonly publishes: HarnessPublished[] = [];
  private readonly driver: HarnessDriver;
  private app?: INestApplicationContext;
  private closed = false;
  /** The stand-in for amqplib's connect this harness sets, and takes back on close. */
  private readonly connectHook = (url: string) => this.connect(url);

  private constructor(
    private readonly clock: VirtualClock,
    private readonly broker: MemoryBroker,
    private readonly brokerVersion: string,
    patienceMs: number,
  ) {
    this.driver = new HarnessDriver(clock, broker, patienceMs);
    this.failures = new HarnessFailures(
      () => this.connections.filter((c) => c.isOpen),
      () => clock.now,
      () => this.driver.awaitConsumers(),
    );
    this.recorder = new HarnessRecorder(() => clock.elapsed);
  }

  /**
   * Starts `module` (the application's root module, or a `Test.createTestingModule(...)` builder whose providers a
   * test overrides) on the in-memory broker. The virtual clock stands in for the global timers and `Date` until
   * `close()` (whether or not Jest's fake timers were on; turned on after the start, they take the timers from it, and
   * `settle` and `advance` fail saying so). What every test file of the process shares (`performance.now()`,
   * `node:timers/promises`, `AbortSignal.timeout`) shows virtual time only to the application's code the harness runs
   * (its start and close, its timers, its deliveries, and what they start), so that a harness one test file never
   * closes leaves the next file's time alone. One harness at a time per test file (Jest gives each file its own global
   * object): a start while another harness runs in the same file fails, naming `close()`.
   */
  static async start(module: Type<unknown> | HarnessModuleBuilder, options: RetryHarnessOptions = {}): Promise<RetryHarness> {
    if (VirtualClock.installedOne()) throw new Error('a RetryHarness is already running in this process: await harness.close() first');
    const startAt = options.startAt instanceof Date ? options.startAt.getTime() : options.startAt;
    const patienceMs = options.realIoPatience === undefined ? DEFAULT_REAL_PATIENCE_MS : ms(options.realIoPatience);
    const clock = new VirtualClock(startAt ?? Date.now());
    const version = options.brokerVersion ?? '4.1.0';
    const broker = new MemoryBroker(clock, deathRulesOf(version), keepsDeliveryCounts({ version }));
    const harness = new RetryHarness(clock, broker, version, patienceMs);
    clock.install();
    replaceBrokerConnect(harness.connectHook);
    try {
      harness.app = await harness.driver.run(
        clock.within(() => harness.boot(module, options)),
        'the application to start',
      );
    } catch (error) {
      await harness.close().catch(() => undefined);
      throw error;
    }
    return harness;
  }

  /** The started application (`harness.app.get(SomeService)`). */
  get application(): INestApplicationContext {
    if (!this.app) throw new Error('harness: the application has not started');
    return this.app;
  }

  /** Virtual milliseconds since the harness started. */
  get elapsed(): number {
    return this.clock.elapsed;
  }

  /** The virtual time now. */
  get now(): Date {
    return new Date(this.clock.now);
  }

  /**
   * Publishes a message as another service would: `body` an object (sent as JSON), a string or a Buffer. Delivery
   * happens at once, without advancing time. Returns the message id (a new UUID unless `properties.messageId` is
   * given), by which `attempts()` finds it, and the queues that took it.
   */
  publish(exchange: string, routingKey: string, body: unknown, properties: HarnessPublishProperties = {}): HarnessPublishReceipt {
    const json = !Buffer.isBuffer(body) && typeof body !== 'string';
    const content = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const messageId = properties.messageId ?? randomUUID();
    const props = publishedProperties({ ...(json ? { contentType: 'application/json' } : {}), persistent: true, ...properties, messageId });
    const { queues } = this.broker.publish(exchange, publishedMessage(exchange, routingKey, content, props));
    const record: PublishRecord = { exchange, routingKey, content, properties: props, at: this.clock.now, queues, mandatory: false, returned: false };
    this.publishes.push({ ...record, body: readBody(content), by: 'harness' });
    return { messageId, queues };
  }

  /**
   * Moves the virtual clock forward by `duration` ('10s', '1h', or ms), running every timer and expiry due on the way.
   * A handler that waits for real I/O of its own is waited for (while nothing moves, up to `realIoPatience`, 2 s of
   * real time by default) before time moves on and before it returns.
   */
  async advance(duration: Duration): Promise<void> {
    await this.driver.advance(ms(duration));
  }

  /**
   * Runs until nothing is under way: no delivery unacknowledged, no message waiting in a queue with a consumer or a
   * TTL (a retry tier, the delay ladder), moving the clock to each next event. Parked messages and messages with no
   * consumer do not count. Fails when it would take more than `within` of virtual time (default 30 days).
   */
  async settle(options: { within?: Duration } = {}): Promise<void> {
    await this.driver.settle(ms(options.within ?? '30d'));
  }

  /** The messages the handlers of `queue` took successfully (every queue's when none is given), in order. */
  handled(queue?: string): HarnessHandled[] {
    return this.recorder.handledMessages.filter((h) => queue === undefined || h.queue === queue);
  }

  /**
   * Every delivery of the message `messageId` to a handler, in order: when, from which tier, what came of it. Without
   * an id, every delivery of every message, in the order they started.
   */
  attempts(messageId?: string): HarnessAttempt[] {
    if (messageId === undefined) return [...this.recorder.allAttempts];
    return [...(this.recorder.attemptsByMessage.get(messageId) ?? [])];
  }

  /**
   * The messages parked for `queue`: a handler's queue (its error queue is read) or an error queue's own name. They
   * stay parked.
   */
  parked(queue: string): HarnessParked[] {
    const errorQueue = this.recorder.errorQueues.get(queue) ?? (this.broker.queues.has(`${queue}.error`) ? `${queue}.error` : queue);
    const found = this.broker.queues.get(errorQueue);
    return (found?.ready ?? []).map(({ message }) => {
      const headers = deliveredHeaders(message, this.broker.rules);
      return {
        messageId: message.properties.messageId as string | undefined,
        reason: headers['x-parked-reason'] as string | undefined,
        error: headers['x-exception-message'] as string | undefined,
        body: readBody(message.content),
        content: message.content,
        headers,
        properties: { ...message.properties, headers },
      };
    });
  }

  /**
   * What was published, in order: by the application (its `RetryPublisher`, its transport client, and the library on
   * its behalf: parked copies, delayed messages and their forwarding), with whether the broker confirmed or returned
   * it, and by the harness. The library's own bookkeeping (its handler registry, retry plans, control messages) is
   * left out.
   */
  published(filter: { exchange?: string; routingKey?: string; by?: HarnessPublished['by'] } = {}): HarnessPublished[] {
    return this.publishes.filter((p) =>
      (['exchange', 'routingKey', 'by'] as const).every((key) => filter[key] === undefined || p[key] === filter[key]),
    );
  }

  /** A queue's state: messages ready, unacknowledged, consumers; undefined when it does not exist. */
  queue(name: string): HarnessQueueState | undefined {
    const found = this.broker.queues.get(name);
    return found && { messages: found.ready.length, unacknowledged: found.unackedCount, consumers: found.consumers.length };
  }

  /** The names of every queue the broker holds, sorted. */
  queues(): string[] {
    return [...this.broker.queues.keys()].sort();
  }

  /**
   * Closes the application (as `app.close()`), then gives back the real timers and amqplib. A handler that never
   * settles holds it up for `realIoPatience` of real time at most; then the clock moves on to the library's shutdown
   * timeout. Safe to call twice.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      const app = this.app;
      if (app)
        await this.driver.run(
          this.clock.within(() => app.close()),
          'the application to close',
        );
    } finally {
      for (const connection of this.connections) if (connection.isOpen) connection.lose('harness closed');
      this.clock.autoRun = false;
      this.clock.clear();
      this.clock.uninstall();
      replaceBrokerConnect(undefined, this.connectHook);
    }
  }

  private async boot(module: Type<unknown> | HarnessModuleBuilder, options: RetryHarnessOptions): Promise<INestApplicationContext> {
    const hybrid = options.microservices !== undefined;
    const logger = options.logger ?? (['error'] as LogLevel[]);
    if ('compile' in module && typeof module.compile === 'function') {
      const compiled = await module.compile();
      compiled.useLogger(logger);
      this.observe(compiled);
      return hybrid ? startHybrid(compiled.createNestApplication(), options) : compiled.init();
    }
    const nestOptions = { logger, abortOnError: false };
    const app = hybrid
      ? await NestFactory.create(module as Type<unknown>, nestOptions)
      : await NestFactory.createApplicationContext(module as Type<unknown>, nestOptions);
    this.observe(app);
    return hybrid ? startHybrid(app as INestApplication, options) : app.init();
  }

  /** Adds the recorder to the application's engine (before it starts consuming: every delivery is seen). */
  private observe(app: INestApplicationContext): void {
    let engine: RetryEngine | undefined;
    try {
      engine = app.get(RetryEngine, { strict: false });
    } catch {
      return; // no RetryModule: only transport servers with engines of their own, which the harness cannot see
    }
    (engine as unknown as { observers: ObserverHub }).observers.add(this.recorder);
  }

  private async connect(url: string): Promise<ChannelModel> {
    if (this.closed) throw new Error('harness: closed');
    // Shaped as Node's own refusal (code, syscall), which is what code that classifies connect failures reads.
    if (this.failures.connectRefused())
      throw Object.assign(new Error(`connect ECONNREFUSED ${url.replace(/\/\/[^@]*@/, '//')} (refused by the harness)`), {
        code: 'ECONNREFUSED',
        syscall: 'connect',
      });
    const published = (record: PublishRecord) => {
      const refused = this.failures.refuses(record);
      if (!bookkeeping(record)) this.publishes.push(Object.assign(record, { body: readBody(record.content), by: 'application' as const }));
      return refused;
    };
    const connection = new MemoryConnection(this.broker, published, this.brokerVersion, (message) => this.recorder.interrupted(message));
    this.connections.push(connection);
    await Promise.resolve();
    return connection as unknown as ChannelModel;
  }
}
