import type { Channel, Options } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp-connection.js';
import { DelayForwardHandler } from '../amqp/delay-forward.handler.js';
import { MessageParker, isMissingTarget } from '../amqp/message.parker.js';
import { QueueConsumer } from '../amqp/queue.consumer.js';
import { delayLadderPrefix, ladderProperties, planDelayedPublish, planDelayTopology } from '../core/delay.plan.js';
import { errorMessage } from '../core/error-message.js';
import { readExpiration } from '../core/message-properties.js';
import { assertDistinctQueues } from '../core/handler-config.js';
import type { IdempotencyStore } from '../core/idempotency-store.js';
import type { ModuleConfig } from '../core/module-config.js';
import { maskingLogger } from '../core/credentials.mask.js';
import type { ScopeQueue } from '../core/parked-scope.js';
import { tierQueues } from '../core/retry-topology.plan.js';
import type { RetryLogger } from '../core/retry-logger.js';
import { NotConnectedError } from '../errors/not-connected.error.js';
import { ObserverHub } from '../observability/observer-hub.js';
import type { PublishKind, RetryObserver } from '../observability/retry-observer.js';
import { idempotencyStoresOf } from './delivery-guarantees.js';
import { drainOtherLadder } from './ladder-drain.js';
import { HandlerRuntime, type EngineHandler, type HandlerRuntimeDeps, type QueueStatus } from './handler-runtime.js';
import { openConnection, PublishingSide } from './publishing-side.js';
import { recordOrWarn } from '../amqp/handler-registry.js';

/** Due delayed messages in flight at once in the forwarder: enough for thousands a second over a few ms of confirms. */
const FORWARDER_PREFETCH = 100;

/** What a health check needs: each connection up or not (undefined before it first opened), each queue consumed or not. */
export interface EngineHealth {
  connections: { consume?: boolean; publish?: boolean };
  queues: QueueStatus[];
}

/**
 * The retry engine, without Nest: the Nest module and the microservices transport are thin adapters over it.
 *
 * It keeps two connections. The consuming one declares the topology and runs the consumers; it never publishes, so a
 * broker that blocks publishers (memory or disk alarm) cannot stop it from taking and acking deliveries. The
 * publishing one (PublishingSide) carries the application's publishes, parked copies and forwarded delayed messages.
 * After a reconnection of the consuming side, every handler's topology is declared again and every consumer resumes;
 * a handler whose recovery fails (its queue now gives a 406) is retried with backoff without holding the others back.
 */
export class RetryEngine {
  private readonly publishing: PublishingSide;
  private consuming?: Promise<AmqpConnection>;
  private runtimes: HandlerRuntime[] = [];
  /** Handlers attached after the start (the transport's queue in a hybrid application): consuming from the first. */
  private attached: HandlerRuntime[] = [];
  private forwarder?: QueueConsumer;
  /** The forwarder of a ladder of the other queue type under the same prefix, left by an earlier configuration. */
  private drain?: QueueConsumer;
  private consumeConnection?: AmqpConnection;
  private closed = false;
  private readonly observers: ObserverHub;
  private deps?: Promise<{ connection: AmqpConnection; parker: MessageParker }>;
  /** The idempotency stores in use, closed with the engine (their own connections, opened on first use). */
  private stores: IdempotencyStore[] = [];
  /** The delay ladder's queue names, for parkingQueues(). */
  private ladderNames?: { readyQueue: string; errorQueue: string };

  /** Every line masked: a log line may quote a broker URL or an error text holding `user:password@`. */
  private readonly logger: RetryLogger;

  constructor(
    private readonly config: ModuleConfig,
    logger: RetryLogger,
    observers: readonly RetryObserver[] = [],
  ) {
    this.logger = maskingLogger(logger);
    this.observers = new ObserverHub(observers, this.logger);
    this.publishing = new PublishingSide(config, this.logger, this.observers);
  }

  /**
   * Publishes `content` and resolves once the broker has confirmed it (with `mandatory`: once a queue took it). With
   * `delayMs` > 0 it goes through the delay ladder and is confirmed when it enters it; the copies waiting there are
   * always persistent, whatever `properties.persistent` says.
   */
  async publish(exchange: string, routingKey: string, content: Buffer, properties: Options.Publish, delayMs = 0): Promise<void> {
    if (this.closed) throw new NotConnectedError('the application has shut down; publish before app.close()');
    const prefix = delayMs > 0 ? this.delayLadderPrefix() : undefined; // throws before publishing if delays are off
    const plan = planDelayedPublish(delayMs, { exchange, routingKey }, Date.now(), prefix);
    readExpiration(properties.expiration); // a malformed one is a RangeError here, not a channel closed by the broker
    if (!this.observers.active) return this.send(plan, exchange, routingKey, content, properties, prefix);
    const kind: PublishKind = plan.kind === 'direct' ? 'publish' : 'delayed';
    const headers: Record<string, unknown> = { ...properties.headers }; // the caller's object is left as it was
    const scope = this.observers.publishing({ kind, exchange, routingKey, headers, messageId: properties.messageId });
    try {
      const send = () => this.send(plan, exchange, routingKey, content, { ...properties, headers }, prefix);
      await (scope?.run ? scope.run(send) : send());
    } catch (error) {
      scope?.end?.(error);
      this.observers.emit('publishRejected', { kind, exchange, routingKey, error });
      throw error;
    }
    scope?.end?.();
    if (kind === 'delayed') this.observers.emit('delayedPublished', { exchange, routingKey, delayMs });
  }

  private async send(
    plan: ReturnType<typeof planDelayedPublish>,
    exchange: string,
    routingKey: string,
    content: Buffer,
    properties: Options.Publish,
    prefix: string | undefined,
  ): Promise<void> {
    const { publisher } = await this.publishing.open();
    if (plan.kind === 'direct') return publisher.publish(exchange, routingKey, content, properties);
    const delayed = ladderProperties(properties, plan.headers);
    await this.publishing.delayLadder();
    try {
      await publisher.publish(plan.exchange, plan.routingKey, content, delayed);
    } catch (error) {
      if (!isMissingTarget(error)) throw error;
      // Part of the ladder was deleted: declare it again, and try once more.
      this.logger.error(`Part of the delay ladder "${prefix}" is missing; declaring it again`);
      this.publishing.forgetLadder();
      await this.publishing.delayLadder();
      await publisher.publish(plan.exchange, plan.routingKey, content, delayed);
    }
  }

  /** The prefix of the delay ladder's names (with `.quorum` for a quorum ladder); throws when delayed delivery is off. */
  delayLadderPrefix(): string {
    if (this.config.delayPrefix === undefined) {
      throw new Error('Delayed delivery is off (RetryModule option delayedDelivery: false); publish without a delay, or turn it on');
    }
    return delayLadderPrefix(this.config.delayPrefix, this.config.delayQueueType);
  }

  /** True while the consuming connection is up and every consumer consumes (or there is nothing to consume). */
  get isConsuming(): boolean {
    return this.allRuntimes.every((r) => r.isConsuming) && (this.forwarder?.isConsuming ?? true);
  }

  private get allRuntimes(): HandlerRuntime[] {
    return [...this.runtimes, ...this.attached];
  }

  /** Opens the publishing connection now rather than at the first publish, so that a wrong URL fails early. */
  async connectPublisher(): Promise<void> {
    if (this.closed) throw new NotConnectedError('the application has shut down');
    await this.publishing.open();
  }

  /**
   * A plain channel on the publishing connection, for traffic that needs one of its own (direct reply-to).
   * `expectClose`: the caller provokes broker closes (a passive declare that may 404), which are then not logged.
   */
  async publishingChannel(purpose: string, expectClose = false): Promise<Channel> {
    if (this.closed) throw new NotConnectedError('the application has shut down');
    const { connection } = await this.publishing.open();
    return connection.createChannel(purpose, expectClose);
  }

  /**
   * Declares and starts consuming more handlers on this engine, whether or not it has started: the transport's
   * queue in a hybrid application shares the module's connections. Their queues must differ from every other's.
   */
  async attach(handlers: readonly EngineHandler[]): Promise<void> {
    if (this.closed) throw new NotConnectedError('the application has shut down');
    // The attached first, so that a clash names the decorated handler's option and the transport as the owner.
    assertDistinctQueues([...handlers, ...this.allRuntimes.map((r) => r.handler)]);
    const deps = await this.runtimeDeps();
    this.keepStores(handlers);
    const added: HandlerRuntime[] = [];
    try {
      for (const handler of handlers) {
        const runtime = new HandlerRuntime(handler, deps);
        added.push(runtime);
        this.attached.push(runtime);
        await runtime.prepare();
        await runtime.consume();
      }
    } catch (error) {
      await this.detach(added.map((r) => r.queue));
      throw error;
    }
  }

  /** Stops consuming the attached handlers of these queues (in-flight handlers finish, up to the shutdown timeout). */
  async detach(queues: readonly string[]): Promise<void> {
    const leaving = this.attached.filter((r) => queues.includes(r.queue));
    this.attached = this.attached.filter((r) => !leaving.includes(r));
    await Promise.all(leaving.map((r) => r.stop(this.config.shutdownTimeoutMs)));
  }

  /**
   * The queues that park in this engine, as it runs them now: each handler's (decorated, and the transport's queues
   * attached) with its parking queue and tiers, and the delay ladder's ready queue with its error queue when delays
   * are on. What this application's parked-messages page and ParkedMessages may see.
   */
  parkingQueues(): ScopeQueue[] {
    const handlers = this.allRuntimes.map(({ handler: { config } }) => ({
      queue: config.queue,
      errorQueue: config.errorQueue,
      tiers: tierQueues(config),
    }));
    if (this.config.delayPrefix === undefined) return handlers;
    const { readyQueue, errorQueue } = (this.ladderNames ??= planDelayTopology(this.config.delayPrefix, this.config.delayQueueType));
    return [...handlers, { queue: readyQueue, errorQueue, tiers: [] }];
  }

  /** Each connection and each consumer, for a health check. */
  health(): EngineHealth {
    const queues = this.allRuntimes.map((r) => r.status);
    if (this.forwarder) queues.push({ queue: this.forwarder.queue, consuming: this.forwarder.isConsuming });
    return { connections: { consume: this.consumeConnection?.isConnected, publish: this.publishing.isConnected }, queues };
  }

  /** Declares every handler's topology and starts consuming, and the delay forwarder when delays are on. */
  async start(handlers: readonly EngineHandler[]): Promise<void> {
    await this.prepare(handlers);
    await this.consume();
  }

  /**
   * Declares every handler's topology (its exchange, queue and tiers) and the delay ladder, without consuming yet:
   * the application may publish from then on (the Nest module does this in its init, before any module's bootstrap).
   */
  async prepare(handlers: readonly EngineHandler[]): Promise<void> {
    // Against the attached ones too: a hybrid app may start its microservices (attach) before its init (prepare).
    assertDistinctQueues([...this.allRuntimes.map((r) => r.handler), ...handlers]);
    this.keepStores(handlers);
    if (handlers.length === 0 && this.config.delayPrefix === undefined) return;
    try {
      const deps = await this.runtimeDeps();
      const { connection, parker } = deps;
      const { observers } = this;
      for (const handler of handlers) {
        const runtime = new HandlerRuntime(handler, deps);
        this.runtimes.push(runtime);
        await runtime.prepare();
      }
      const ladder = await this.publishing.delayLadder();
      if (ladder) {
        const { forwarder } = await this.publishing.open();
        const redeclare = () => (this.publishing.forgetLadder(), this.publishing.delayLadder());
        // The ladder parks what it cannot deliver; a replay sends it back to the ready queue, whose forwarder retries.
        const { application } = this.config;
        const entry = { queue: ladder.readyQueue, errorQueue: ladder.errorQueue, tiers: [], queueType: ladder.queueType, application };
        await recordOrWarn(() => connection.createChannel('handler registry', true), parker.publisher, entry, this.logger);
        const park = { errorQueue: ladder.errorQueue, redeclare };
        const forward = new DelayForwardHandler(ladder, forwarder, parker, park, this.logger, observers);
        const { reconnect: resume } = this.config;
        this.forwarder = new QueueConsumer(
          { queue: ladder.readyQueue, prefetch: FORWARDER_PREFETCH, connection, logger: this.logger, resume, redeclare, observers },
          forward.handle,
        );
        const drainDeps = { connection, forwarder, parker, park, logger: this.logger, resume, prefetch: FORWARDER_PREFETCH };
        this.drain = await drainOtherLadder(ladder, this.config.delayPrefix as string, drainDeps);
      }
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  /** Starts the consumers of what `prepare()` declared. */
  async consume(): Promise<void> {
    try {
      for (const runtime of this.runtimes) await runtime.consume();
      if (this.forwarder) {
        await this.forwarder.start();
        this.logger.log(`Forwarding due delayed messages from "${this.forwarder.queue}"`);
        // Best effort: an old ladder deleted since prepare(), or one this user may not read, never stops the start.
        await this.drain
          ?.start()
          .catch((error: unknown) => this.logger.warn(`Could not forward from the other delay ladder: ${errorMessage(error)}`));
      }
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  /** Stops every consumer; handlers in flight finish (up to the shutdown timeout) and settle. Publishing still works. */
  async stopConsuming(): Promise<void> {
    const runtimes = [...this.runtimes.splice(0), ...this.attached.splice(0)];
    const forwarder = this.forwarder;
    const drain = this.drain;
    this.forwarder = undefined;
    this.drain = undefined;
    const timeout = this.config.shutdownTimeoutMs;
    await Promise.all([...runtimes.map((r) => r.stop(timeout)), forwarder?.stop(timeout), drain?.stop(timeout)]);
  }

  /** Stops consuming, then closes both connections; publishing fails from now on. */
  async close(): Promise<void> {
    await this.stopConsuming();
    this.closed = true;
    const consuming = this.consuming;
    this.consuming = undefined;
    this.deps = undefined;
    const stores = this.stores.splice(0);
    await Promise.all([
      this.publishing.close(),
      consuming?.then((c) => c.close()).catch(() => undefined),
      ...stores.map((store) =>
        store.close?.().catch((error: unknown) => this.logger.warn(`Closing an idempotency store failed: ${errorMessage(error)}`)),
      ),
    ]);
  }

  /** What every handler runtime of this engine shares. */
  private async runtimeDeps(): Promise<HandlerRuntimeDeps> {
    const { connection, parker } = await this.consumingDeps();
    const { logger, observers } = this;
    const { application, reconnect: resume } = this.config;
    return { connection, parker, recordPublisher: parker.publisher, logger, resume, observers, application };
  }

  /**
   * Adds the idempotency stores of these handlers (and the module default) to those closed with the engine: attach()
   * may run before prepare() in a hybrid application, so neither may forget the other's.
   */
  private keepStores(handlers: readonly EngineHandler[]): void {
    for (const store of idempotencyStoresOf([...handlers.map((h) => h.config), { idempotency: this.config.idempotency }])) {
      if (!this.stores.includes(store)) this.stores.push(store);
    }
  }

  /** The consuming connection and the parker, which publishes on the publishing connection; one parker per engine. */
  private consumingDeps(): Promise<{ connection: AmqpConnection; parker: MessageParker }> {
    this.deps ??= (async () => {
      const connection = await this.consumingConnection();
      const { parker } = await this.publishing.open();
      return { connection, parker: new MessageParker(parker, this.logger, this.observers, this.config.failureLogs) };
    })();
    const deps = this.deps;
    deps.catch(() => {
      if (this.deps === deps) this.deps = undefined;
    });
    return deps;
  }

  private consumingConnection(): Promise<AmqpConnection> {
    this.consuming ??= openConnection(this.config, 'consume', this.logger, this.observers).then((connection) => {
      this.consumeConnection = connection;
      connection.onReconnect(() => this.recover());
      return connection;
    });
    return this.consuming;
  }

  /**
   * After a reconnection: every handler resumes on its own, so one whose queue now refuses its declaration (a 406)
   * does not hold the others back; the failure is thrown, and the connection's recovery tries again with backoff
   * (the handlers already consuming are left as they are).
   */
  private async recover(): Promise<void> {
    this.publishing.forgetLadder();
    const runtimes = this.allRuntimes;
    const results = await Promise.allSettled([
      ...runtimes.map((runtime) => runtime.resume()),
      this.forwarder ? this.publishing.delayLadder().then(() => this.forwarder?.start()) : undefined,
    ]);
    // An old ladder's forwarder stops by itself once that ladder is gone; it never holds the recovery back.
    void this.drain?.start().catch(() => undefined);
    const failed = results.flatMap((result, i) => (result.status === 'rejected' ? [{ i, reason: result.reason as unknown }] : []));
    this.logger.log(`Resumed consuming ${runtimes.length + (this.forwarder ? 1 : 0) - failed.length} queue(s)`);
    if (failed.length > 0) {
      const names = failed.map(({ i }) => runtimes[i]?.queue ?? 'the delay forwarder').join(', ');
      throw new Error(`could not resume ${names}: ${failed.map(({ reason }) => errorMessage(reason)).join('; ')}`);
    }
  }
}
