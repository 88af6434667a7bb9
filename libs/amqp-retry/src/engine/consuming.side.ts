import { openConnection, type AmqpConnection } from '../amqp/amqp.connection.js';
import { assertDistinctQueues } from '../core/config/handler.config.js';
import { refusesWhenFull } from '../core/publish/full-queue.hint.js';
import type { ModuleConfig } from '../core/config/module.config.js';
import { idempotencyStoresOf } from '../core/idempotency/idempotency.config.js';
import type { IdempotencyStore } from '../core/idempotency/idempotency.store.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { NotConnectedError } from '../errors/not-connected.error.js';
import { MessageParker } from '../pipeline/park-route.steps.js';
import { ControlSide } from './control.side.js';
import type { HandOverNote } from '../core/delivery/hand-over.note.js';
import { HeartbeatRuntime } from './heartbeat.runtime.js';
import { DEFAULT_HEARTBEAT_INTERVAL_MS } from '../core/observe/heartbeat/heartbeat.config.js';
import { HeartbeatCollector } from '../core/observe/heartbeat/heartbeat.collector.js';
import type { FleetHistory } from '../core/observe/heartbeat/fleet.history.js';
import type { ReplyAddressChecker } from './reply-address.checker.js';
import { DelayForwarding } from './delay.forwarding.js';
import { HandlerRuntime, type EngineHandler, type HandlerRuntimeDeps, type QueueStatus } from './handler.runtime.js';
import type { OutboxSide } from './outbox.side.js';
import { checkPartitionChannels, PartitionedRuntime, type PartitionsStatus } from './partitions.runtime.js';
import { consumedQueues, flowOf, queueRuntimeOf, queueActivity, queueStatuses, type QueueActivity, type Runtime } from './engine.views.js';
import type { QueueFlowStatus } from './queue-flow.control.js';
import { ActivityCounter } from '../core/observe/activity.counter.js';
import type { PublishingSide } from './publishing.side.js';

/** What the consuming side works with: the engine's other sides and its shared parts. */
export interface ConsumingSideDeps {
  config: ModuleConfig;
  logger: RetryLogger;
  observers: ObserverHub;
  publishing: PublishingSide;
  outbox: OutboxSide;
  replyAddresses: ReplyAddressChecker;
}

/**
 * The consuming half of the engine: a connection of its own that declares the topology, runs the consumers and never
 * publishes, so that a broker that blocks publishers (a memory or disk alarm) cannot stop it from acking deliveries.
 */
export class ConsumingSide {
  private runtimes: Runtime[] = [];
  /** Handlers attached after the start (the transport's queue in a hybrid application): consuming from the first. */
  private attached: Runtime[] = [];
  readonly forwarding: DelayForwarding;
  /** Pause and resume of these runtimes' queues, here and everywhere. */
  readonly control: ControlSide;
  private consuming?: Promise<AmqpConnection>;
  private connection?: AmqpConnection;
  private deps?: Promise<HandlerRuntimeDeps>;
  /** The idempotency stores in use, closed with the engine (their own connections, opened on first use). */
  private stores: IdempotencyStore[] = [];
  private closed = false;
  /** True once stop() began: the heartbeat does not start after it. */
  private stopping = false;
  private activityCounter?: ActivityCounter;
  private heartbeat?: HeartbeatRuntime;
  /** hasQueuesThatRefuse's answer, forgotten whenever a handler is added or removed. */
  private refusing?: boolean;

  constructor(private readonly sides: ConsumingSideDeps) {
    const { config, publishing, logger, observers } = sides;
    this.forwarding = new DelayForwarding(config, publishing, logger, observers);
    this.control = new ControlSide({
      ...sides,
      flowOf: (queue) => flowOf(this.all, queue),
      handedOver: (note) => queueRuntimeOf(this.all, note.queue)?.creditReturns(note),
    });
  }

  /** Every runtime: started with the application, then attached. */
  get all(): Runtime[] {
    return [...this.runtimes, ...this.attached];
  }

  /** Whether a handler queue refuses publishes once full: only then is a nacked publish worth explaining. */
  get hasQueuesThatRefuse(): boolean {
    this.refusing ??= this.all.some((r) => refusesWhenFull(r.handler.config));
    return this.refusing;
  }

  /** True while every consumer consumes (or there is nothing to consume). */
  get isConsuming(): boolean {
    return this.all.every((r) => r.isConsuming) && (this.forwarding.consumer?.isConsuming ?? true);
  }

  /** Each handler queue's flow state (partitioned handlers have none). */
  queueStates(): QueueFlowStatus[] {
    return this.all.flatMap((r) => (r instanceof PartitionedRuntime ? [] : [r.flow.status()]));
  }

  /** Each partitioned handler's partitions as this instance sees them. */
  partitions(): PartitionsStatus[] {
    return this.all.flatMap((r) => (r instanceof PartitionedRuntime ? [r.status()] : []));
  }

  /** Each queue's deliveries in flight and outcomes; counting starts on the first call, so an unopened page costs nothing. */
  activity(): QueueActivity[] {
    if (!this.activityCounter) {
      this.activityCounter = new ActivityCounter();
      this.sides.observers.add(this.activityCounter); // parks
      this.sides.observers.count(this.activityCounter); // handler calls, without events
    }
    return queueActivity(this.all, this.forwarding.consumer, this.activityCounter);
  }

  /** Each queue consumed or not, for health checks. */
  statuses(): QueueStatus[] {
    return queueStatuses(this.all, this.forwarding.consumer);
  }

  /** Whether the consuming connection is up; undefined before it first opened. */
  get isConnected(): boolean | undefined {
    return this.connection?.isConnected;
  }

  /** Checks that these handlers' queues differ from every other's, keeps their stores, and makes sure of their tables. */
  async admit(handlers: readonly EngineHandler[]): Promise<void> {
    // Against the attached ones too: a hybrid app may start its microservices (attach) before its init (prepare).
    assertDistinctQueues([...this.all.map((r) => r.handler), ...handlers]);
    this.keepStores(handlers);
    await this.sides.outbox.prepareTables(handlers);
  }

  /** Declares each admitted handler's topology and the delay ladder with its forwarder, without consuming yet. */
  async prepare(handlers: readonly EngineHandler[]): Promise<void> {
    if (handlers.length === 0 && this.sides.config.delayPrefix === undefined) return;
    const deps = await this.runtimeDeps(handlers);
    for (const handler of handlers) await this.add(handler, deps, this.runtimes).prepare();
    await this.forwarding.prepare(deps.connection, deps.parker);
  }

  /**
   * Starts the control listener, the consumers of what `prepare()` declared, and the delay forwarder. The listener
   * first: a partition handed to this instance as soon as it joins comes with the note of its returns on purpose.
   */
  async consume(): Promise<void> {
    const connection = this.runtimes.length > 0 ? await this.consumingConnection() : undefined;
    if (connection) await this.control.listen(connection, consumedQueues(this.all));
    for (const runtime of this.runtimes) await runtime.consume();
    if (connection) this.beat();
    await this.forwarding.start();
  }

  /** With RetryModuleOptions.heartbeat, starts the heartbeat: an instance that consumes beats whether or not it serves the page. */
  private beat(): void {
    const { heartbeat } = this.sides.config;
    if (heartbeat) this.startHeartbeat(undefined, heartbeat.intervalMs);
  }

  /** Declares and consumes more handlers, whether or not the engine started (see RetryEngine.attach). */
  async attach(handlers: readonly EngineHandler[]): Promise<void> {
    if (this.closed) throw new NotConnectedError('the application has shut down');
    // The attached first, so that a clash names the decorated handler's option and the transport as the owner.
    assertDistinctQueues([...handlers, ...this.all.map((r) => r.handler)]);
    const deps = await this.runtimeDeps(handlers);
    this.keepStores(handlers);
    await this.sides.outbox.prepareTables(handlers);
    const added: Runtime[] = [];
    try {
      for (const handler of handlers) {
        const runtime = this.add(handler, deps, this.attached);
        added.push(runtime);
        await runtime.prepare();
      }
      await this.control.listen(deps.connection, consumedQueues(this.all)); // before consuming, as consume() does
      for (const runtime of added) await runtime.consume();
      this.beat();
    } catch (error) {
      await this.detach(added.map((r) => r.queue));
      throw error;
    }
  }

  /** Stops consuming the attached handlers of these queues (in-flight handlers finish, up to the shutdown timeout). */
  async detach(queues: readonly string[]): Promise<void> {
    const leaving = this.attached.filter((r) => queues.includes(r.queue));
    this.attached = this.attached.filter((r) => !leaving.includes(r));
    this.refusing = undefined;
    await Promise.all(leaving.map((r) => r.stop(this.sides.config.shutdownTimeoutMs)));
  }

  /** Starts this instance's heartbeat (once; stopped with the consumers); with `fleet`, keeps every instance's beats in it. */
  startHeartbeat(fleet?: FleetHistory, intervalMs = DEFAULT_HEARTBEAT_INTERVAL_MS): void {
    if (this.closed || this.stopping) return;
    if (this.heartbeat) {
      if (fleet) this.heartbeat.watch(fleet); // beating already (RetryModuleOptions.heartbeat): the page listens too
      return;
    }
    const { observers } = this.sides;
    const collector = new HeartbeatCollector();
    observers.add(collector); // parks and breaker changes
    observers.count(collector); // handler calls, without events
    this.heartbeat = new HeartbeatRuntime({
      ...this.sides,
      intervalMs,
      collector,
      fleet,
      consumeChannel: async (purpose) => (await this.consumingConnection()).createChannel(purpose, true),
      consumed: () => this.statuses(),
      flows: () => this.queueStates(),
      partitions: () => this.partitions(),
    });
    this.heartbeat.start();
  }

  /** Stops every consumer; handlers in flight finish (up to the shutdown timeout) and settle. */
  async stop(): Promise<void> {
    this.stopping = true; // no heartbeat starts from now on (an attach() that ends during the stop)
    const runtimes = [...this.runtimes.splice(0), ...this.attached.splice(0)];
    this.refusing = undefined;
    const timeout = this.sides.config.shutdownTimeoutMs;
    const heartbeat = this.heartbeat;
    this.heartbeat = undefined;
    await Promise.all([...runtimes.map((r) => r.stop(timeout)), this.forwarding.stop(timeout), heartbeat?.stop()]);
  }

  /** Closes the consuming connection and the idempotency stores; nothing opens again. */
  async close(): Promise<void> {
    this.closed = true;
    const { heartbeat, consuming } = this; // the heartbeat: stopped with the consumers, unless close() came without stop()
    this.heartbeat = undefined;
    this.consuming = undefined;
    this.deps = undefined;
    const stores = this.stores.splice(0);
    const { logger } = this.sides;
    await Promise.all([
      heartbeat?.stop(),
      consuming?.then((c) => c.close()).catch(() => undefined),
      ...stores.map((store) => store.close?.().catch((error: unknown) => logger.warn(`Closing an idempotency store failed: ${errorMessage(error)}`))),
    ]);
  }

  /** A handler's runtime, kept in `list`: a partitioned one runs one runtime per partition, and the membership that spreads them. */
  private add(handler: EngineHandler, deps: HandlerRuntimeDeps, list: Runtime[]): Runtime {
    const { config, publishing } = this.sides;
    const runtime =
      handler.config.partitions === undefined ? new HandlerRuntime(handler, deps) : new PartitionedRuntime(handler, { ...deps, config, publishing });
    list.push(runtime);
    this.refusing = undefined;
    return runtime;
  }

  /**
   * What every runtime shares: the consuming connection and the parker, which publishes on the publishing connection
   * (one parker per engine). Refuses `adding` when their partitions, with every other's, would need more channels than
   * the connection has.
   */
  private async runtimeDeps(adding: readonly EngineHandler[]): Promise<HandlerRuntimeDeps> {
    const opening = (this.deps ??= (async () => {
      const connection = await this.consumingConnection();
      const publishers = await this.sides.publishing.open();
      const { logger, observers, config } = this.sides;
      const parker = new MessageParker(publishers.parker, logger, observers, config.parkLogs);
      const { reconnect: resume, application, shutdownTimeoutMs: handOverTimeoutMs } = config;
      const announceReturns = (note: HandOverNote) => this.control.announceReturns(note);
      return { connection, parker, recordPublisher: parker.publisher, logger, resume, observers, application, handOverTimeoutMs, announceReturns };
    })());
    opening.catch(() => this.deps === opening && (this.deps = undefined));
    const deps = await opening;
    checkPartitionChannels([...this.all.map((r) => r.handler), ...adding], deps.connection);
    return deps;
  }

  /** Keeps these handlers' idempotency stores (and the module default) to close: attach() may run before prepare(). */
  private keepStores(handlers: readonly EngineHandler[]): void {
    for (const store of idempotencyStoresOf([...handlers.map((h) => h.config), { idempotency: this.sides.config.idempotency }])) {
      if (!this.stores.includes(store)) this.stores.push(store);
    }
  }

  private consumingConnection(): Promise<AmqpConnection> {
    // After close() nothing may open a connection that nobody would close (a start that close() cut short).
    if (this.closed) return Promise.reject(new NotConnectedError('the application has shut down'));
    const { config, logger, observers } = this.sides;
    this.consuming ??= openConnection(config, 'consume', logger, observers).then((connection) => {
      this.connection = connection;
      connection.onReconnect(() => this.recover());
      return connection;
    });
    return this.consuming;
  }

  /**
   * After a reconnection the control listener starts again first, then every handler resumes on its own, so one whose queue now refuses its declaration (a 406) does
   * not hold the others back; the failure is thrown, and the connection's recovery tries again with backoff.
   */
  private async recover(): Promise<void> {
    this.sides.publishing.forgetLadder();
    const runtimes = this.all;
    // The control listener's queue died with the connection: bound again before the consumers resume, so that a
    // partition handed to this instance meanwhile comes with its note, as at the start. It only warns if it cannot.
    await this.control.restart(consumedQueues(runtimes));
    const forwarding = this.forwarding.resume();
    const results = await Promise.allSettled([...runtimes.map((runtime) => runtime.resume()), forwarding]);
    const failed = results.flatMap((result, i) => (result.status === 'rejected' ? [{ i, reason: result.reason as unknown }] : []));
    this.sides.logger.log(`Resumed consuming ${runtimes.length + (forwarding ? 1 : 0) - failed.length} queue(s)`);
    if (failed.length > 0) {
      const names = failed.map(({ i }) => runtimes[i]?.queue ?? 'the delay forwarder').join(', ');
      throw new Error(`could not resume ${names}: ${failed.map(({ reason }) => errorMessage(reason)).join('; ')}`);
    }
  }
}
