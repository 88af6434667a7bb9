import type { Channel, Options } from 'amqplib';
import { fullQueueHint, refusesWhenFull } from '../core/publish/full-queue.hint.js';
import { PublishError } from '../errors/publish.error.js';
import { openConnection, type AmqpConnection } from '../amqp/amqp.connection.js';
import { DelayForwardHandler } from '../pipeline/delay.forwarder.js';
import { MessageParker } from '../pipeline/park-route.steps.js';
import { isMissingTarget } from '../core/publish/publish.outcome.js';
import { QueueConsumer } from '../amqp/queue.consumer.js';
import { delayLadderPrefix, ladderProperties, planDelayedPublish, planDelayTopology, readPublishDelay } from '../core/delivery/delay.plan.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { checkPublishProperties } from '../core/message/message.properties.js';
import { assertDistinctQueues } from '../core/config/handler.config.js';
import type { IdempotencyStore } from '../core/idempotency/idempotency.store.js';
import { resolveModuleConfig, type ModuleConfig } from '../core/config/module.config.js';
import type { RetryModuleOptions } from '../core/config/retry.options.js';
import { maskingLogger } from '../core/text/credentials.mask.js';
import type { ScopeQueue } from '../core/parking/parked.scope.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { NotConnectedError } from '../errors/not-connected.error.js';
import { ActivityCounter, type ActivityCounts } from '../core/observe/activity.counter.js';
import { ObserverHub } from '../core/observe/observer.hub.js';
import type { PublishKind, RetryObserver } from '../core/observe/retry.observer.js';
import { idempotencyStoresOf } from '../core/idempotency/idempotency.config.js';
import { drainOtherLadder } from './ladder.drain.js';
import { HandlerRuntime, scheduleTiers, type EngineHandler, type HandlerRuntimeDeps, type QueueStatus } from './handler.runtime.js';
import { checkPartitionChannels, PartitionedRuntime, type PartitionsStatus } from './partitions.runtime.js';
import { PublishingSide, type PublisherRole } from './publishing.side.js';
import { ReplyAddressChecker } from './reply-address.checker.js';
import type { ReplyAddressState } from '../core/publish/reply-address.rules.js';
import { recordOrWarn } from '../amqp/handler-registry.writer.js';
import type { OutboxMessage } from '../core/outbox/outbox.message.js';
import { relayPoolProblem } from '../core/outbox/outbox.pool.js';
import { RetryConfigError } from '../errors/retry-config.error.js';
import { OutboxRelay, type OutboxRelayHealth } from './outbox.relay.js';
import { prepareTable } from './outbox.tables.js';
import { writeToOutbox, type OutboxReceipt } from './outbox.writer.js';
import { queueStateWord, readPauseBy } from '../core/breaker/queue.state.js';
import { CONTROL_EXCHANGE, encodeControl, type ControlCommand } from '../core/breaker/control.message.js';
import type { QueueFlowControl, QueueFlowStatus } from './queue-flow.control.js';
import { ControlListener } from './control.listener.js';
import { brokerUser, HEARTBEAT_INTERVAL_MS, HeartbeatRuntime } from './heartbeat.runtime.js';
import { HeartbeatCollector } from '../core/observe/heartbeat/heartbeat.collector.js';
import type { FleetHistory } from '../core/observe/heartbeat/fleet.history.js';
import { hostname } from 'node:os';
import { CLOSE_WAIT_MS, closeWhenOpen } from '../amqp/channel-close.settler.js';
import { withinTime } from '../core/time/duration.timer.js';

/** How long close() waits for the consumers to stop past the shutdown timeout, before it closes the connections under them. */
const STOP_MARGIN_MS = 2_000;

type DelayedPublishPlan = ReturnType<typeof planDelayedPublish>;

/** Due delayed messages in flight at once in the forwarder: enough for thousands a second over a few ms of confirms. */
const FORWARDER_PREFETCH = 100;

/** The outbox's backlog as the parked-messages page shows it. */
export interface OutboxBacklog {
  table: string;
  waiting: number;
  oldestAgeMs: number;
  parked: number;
  /** The table's size on disk in bytes, indexes included. */
  tableBytes: number;
  /** This instance's relay, when it runs one. */
  relay?: OutboxRelayHealth;
}

/** A handler's runtime: one queue, or the partitions of a partitioned handler. */
type Runtime = HandlerRuntime | PartitionedRuntime;

/** What a health check needs: each connection up or not (undefined before it first opened), each queue consumed or not. */
export interface EngineHealth {
  /** Each of the two connections: up or not; undefined before it first opened. */
  connections: {
    /** The consuming connection (topology, consumers). */
    consume?: boolean;
    /** The publishing connection (the application's publishes, parked copies, forwarded delayed messages). */
    publish?: boolean;
  };
  /** Each handler queue: consumed or not. */
  queues: QueueStatus[];
  /** The outbox relay of this instance, when it runs one. */
  outbox?: OutboxRelayHealth;
}

/** One of the engine's queues as its page shows it live: deliveries in flight, and outcomes counted since `activity()` was first called. */
export interface QueueActivity extends ActivityCounts {
  /** The handler queue. */
  queue: string;
  /** Deliveries taken by this instance and not yet settled. */
  inFlight: number;
  /**
   * A word on the queue's consuming state from a feature that can stop it (a breaker: "breaker open", a pause:
   * "paused"), shown in the page's State column; absent when consuming as usual.
   */
  state?: string;
}

/**
 * The retry engine, without Nest: the Nest module and the microservices transport are thin adapters over it.
 *
 * It keeps two connections. The consuming one declares the topology and runs the consumers; it never publishes, so a
 * broker that blocks publishers (memory or disk alarm) cannot stop it from taking and acking deliveries. The
 * publishing one (PublishingSide) carries the application's publishes, parked copies and forwarded delayed messages.
 * A third, `<connectionName> replies`, opens only when something replies to a direct reply-to address (RetryServer's
 * requests, control messages): it asks the broker about those addresses and carries nothing else (ReplyAddressChecker).
 * After a reconnection of the consuming side, every handler's topology is declared again and every consumer resumes;
 * a handler whose recovery fails (its queue now gives a 406) is retried with backoff without holding the others back.
 */
export class RetryEngine {
  private readonly publishing: PublishingSide;
  /** Asks about direct reply-to addresses before anything replies to them, on a connection of its own. */
  private readonly replyAddresses: ReplyAddressChecker;
  private consuming?: Promise<AmqpConnection>;
  private runtimes: Runtime[] = [];
  /** Handlers attached after the start (the transport's queue in a hybrid application): consuming from the first. */
  private attached: Runtime[] = [];
  private forwarder?: QueueConsumer;
  /** The forwarder of a ladder of the other queue type under the same prefix, left by an earlier configuration. */
  private drain?: QueueConsumer;
  private consumeConnection?: AmqpConnection;
  private closed = false;
  /** Stops that did not end within their bound (see stopConsuming): close() ends them by closing the connections. */
  private readonly lateStops: Array<Promise<unknown>> = [];
  private readonly observers: ObserverHub;
  private deps?: Promise<{ connection: AmqpConnection; parker: MessageParker }>;
  /** The idempotency stores in use, closed with the engine (their own connections, opened on first use). */
  private stores: IdempotencyStore[] = [];
  /** Counts outcomes per queue for the page; made (and added to the observers) by the first activity() call. */
  private activityCounter?: ActivityCounter;
  /** The outbox relay, while it runs. */
  private relay?: OutboxRelay;
  /** Inbox tables made sure of (by their quoted names), once per engine. */
  private readonly inboxTables = new Set<string>();
  /** Pause and resume commands from other processes (the CLI): opened with the consumers. */
  private control?: ControlListener;
  /** This instance's heartbeat (see startHeartbeat). */
  private heartbeat?: HeartbeatRuntime;
  private replies?: Promise<Channel>;
  /** The delay ladder's queue names, for parkingQueues(). */
  private ladderNames?: { readyQueue: string; errorQueue: string };

  /** Every line masked: a log line may quote a broker URL or an error text holding `user:password@`. */
  private readonly logger: RetryLogger;

  private constructor(
    private readonly config: ModuleConfig,
    logger: RetryLogger,
    observers: readonly RetryObserver[] = [],
  ) {
    this.logger = maskingLogger(logger);
    this.observers = new ObserverHub(observers, this.logger);
    this.publishing = new PublishingSide(config, this.logger, this.observers);
    this.replyAddresses = new ReplyAddressChecker(config, this.logger);
  }

  /**
   * An engine without Nest, from the options RetryModule takes (and the environment, as it reads it). Pass it to
   * RetryServer or RetryClient as `engine`; `close()` it at shutdown.
   * @example const engine = RetryEngine.create({ url: 'amqp://localhost' }, console, [await createPrometheusObserver()]);
   */
  static create(options: RetryModuleOptions = {}, logger: RetryLogger = console, observers: readonly RetryObserver[] = []): RetryEngine {
    return new RetryEngine(resolveModuleConfig(options, process.env), logger, observers);
  }

  /** @internal The engine of a configuration already read (RetryModule, RetryServer, RetryClient). */
  static fromConfig(config: ModuleConfig, logger: RetryLogger, observers: readonly RetryObserver[] = []): RetryEngine {
    return new RetryEngine(config, logger, observers);
  }

  /**
   * Publishes `content` and resolves once the broker has confirmed it (with `mandatory`: once a queue took it). With
   * `delayMs` > 0 it goes through the delay ladder and is confirmed when it enters it; the copies waiting there are
   * always persistent, whatever `properties.persistent` says.
   */
  publish(exchange: string, routingKey: string, content: Buffer, properties: Options.Publish, delayMs = 0): Promise<void> {
    return this.publishOn('publisher', exchange, routingKey, content, properties, delayMs);
  }

  /**
   * @internal The outbox relay's publish: as `publish`, on a confirm channel of its own, so that a row the broker
   * refuses (and the channel it closes) never disturbs the application's publishes, nor they the relay's.
   */
  relayPublish(exchange: string, routingKey: string, content: Buffer, properties: Options.Publish, delayMs = 0): Promise<void> {
    return this.publishOn('relay', exchange, routingKey, content, properties, delayMs);
  }

  private publishOn(
    via: PublisherRole,
    exchange: string,
    routingKey: string,
    content: Buffer,
    properties: Options.Publish,
    delayMs: number,
  ): Promise<void> {
    // Not async: the usual publish hands amqplib's promise chain back as it is, with no wrapper of ours to settle
    // (one promise and a microtask less a publish; a flood holds 100,000 of them). Errors still come as rejections.
    let plan: DelayedPublishPlan;
    let prefix: string | undefined;
    try {
      if (this.closed) throw new NotConnectedError('the application has shut down; publish before app.close()');
      prefix = delayMs > 0 ? this.delayLadderPrefix() : undefined; // throws before publishing if delays are off
      plan = planDelayedPublish(delayMs, { exchange, routingKey }, Date.now(), prefix);
      checkPublishProperties(properties); // a bad one is a TypeError or RangeError here, not a failed send or a closed channel
    } catch (error) {
      return Promise.reject(error);
    }
    if (!this.observers.active) return this.send(via, plan, exchange, routingKey, content, properties, prefix);
    return this.publishObserved(via, plan, exchange, routingKey, content, properties, delayMs, prefix);
  }

  private async publishObserved(
    via: PublisherRole,
    plan: DelayedPublishPlan,
    exchange: string,
    routingKey: string,
    content: Buffer,
    properties: Options.Publish,
    delayMs: number,
    prefix: string | undefined,
  ): Promise<void> {
    const kind: PublishKind = plan.kind === 'direct' ? 'publish' : 'delayed';
    const headers: Record<string, unknown> = { ...properties.headers }; // the caller's object is left as it was
    const scope = this.observers.publishing({ kind, exchange, routingKey, headers, messageId: properties.messageId });
    try {
      const send = () => this.send(via, plan, exchange, routingKey, content, { ...properties, headers }, prefix);
      await (scope?.run ? scope.run(send) : send());
    } catch (error) {
      scope?.end?.(error);
      this.observers.emit('publishRejected', { kind, exchange, routingKey, error });
      throw error;
    }
    scope?.end?.();
    if (kind === 'delayed') this.observers.emit('delayedPublished', { exchange, routingKey, delayMs });
  }

  /**
   * Writes `message` to the outbox in the caller's transaction `tx` (see OutboxPublisher); the relay publishes it
   * once that transaction commits.
   */
  async writeToOutbox<Tx>(tx: Tx, message: OutboxMessage): Promise<OutboxReceipt> {
    const { outbox } = this.config;
    if (!outbox) throw new Error('The outbox is not configured: give RetryModule option "outbox", e.g. { adapter: pgOutboxAdapter(pool) }');
    // A delay this instance could never deliver fails here, in the caller's transaction, rather than parking later.
    if (message?.delay !== undefined && readPublishDelay(message.delay) > 0) this.delayLadderPrefix();
    return writeToOutbox(outbox, tx, message);
  }

  /**
   * @internal
   * The outbox's backlog now (rows waiting, the oldest one's age, rows parked) and this instance's relay; undefined
   * without an outbox. For the parked-messages page; metrics read the same every few seconds.
   */
  async outboxBacklog(): Promise<OutboxBacklog | undefined> {
    const { outbox } = this.config;
    if (!outbox) return undefined;
    const { rows } = await outbox.adapter.transaction((tx) => outbox.adapter.execute(tx, outbox.sql.stats, []));
    const stats = rows[0] ?? {};
    return {
      table: outbox.tableName,
      waiting: Number(stats.waiting ?? 0),
      oldestAgeMs: Number(stats.oldest_ms ?? 0),
      parked: Number(stats.parked ?? 0),
      tableBytes: Number(stats.table_bytes ?? 0),
      relay: this.relay ? this.relay.health() : undefined,
    };
  }

  private send(
    via: PublisherRole,
    plan: DelayedPublishPlan,
    exchange: string,
    routingKey: string,
    content: Buffer,
    properties: Options.Publish,
    prefix: string | undefined,
  ): Promise<void> {
    // Once open, a direct publish goes straight to the channel: no await (and no suspended frame) of ours in between.
    const open = this.publishing.openNow;
    if (open && plan.kind === 'direct') return open[via].publish(exchange, routingKey, content, properties);
    return this.sendWhenOpen(via, plan, exchange, routingKey, content, properties, prefix);
  }

  private async sendWhenOpen(
    via: PublisherRole,
    plan: DelayedPublishPlan,
    exchange: string,
    routingKey: string,
    content: Buffer,
    properties: Options.Publish,
    prefix: string | undefined,
  ): Promise<void> {
    const publisher = (await this.publishing.open())[via];
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

  /** @internal The prefix of the delay ladder's names (with `.quorum` for a quorum ladder); throws when delayed delivery is off. */
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

  /** Whether a handler queue refuses publishes once full: only then is a nacked publish worth explaining. */
  get hasQueuesThatRefuse(): boolean {
    this.refusing ??= this.allRuntimes.some((r) => refusesWhenFull(r.handler.config));
    return this.refusing;
  }

  /** hasQueuesThatRefuse's answer, forgotten whenever a handler is added or removed. */
  private refusing?: boolean;

  /**
   * A nacked publish's error, naming the full handler queues that refuse publishes and that it may reach (see
   * fullQueueHint); any other error as it is.
   */
  explainRefusal(error: unknown, exchange: string, routingKey: string): unknown {
    if (!(error instanceof PublishError) || !error.message.includes('nacked')) return error;
    const hint = fullQueueHint(
      exchange,
      routingKey,
      this.allRuntimes.map((r) => r.handler.config),
    );
    return hint === undefined ? error : new PublishError(exchange, routingKey, hint, error.brokerCode);
  }

  private get allRuntimes(): Runtime[] {
    return [...this.runtimes, ...this.attached];
  }

  /** @internal Opens the publishing connection now rather than at the first publish, so that a wrong URL fails early. */
  async connectPublisher(): Promise<void> {
    if (this.closed) throw new NotConnectedError('the application has shut down');
    await this.publishing.open();
  }

  /**
   * @internal
   * A plain channel on the publishing connection, for traffic that needs one of its own (direct reply-to).
   * `expectClose`: the caller provokes broker closes (a passive declare that may 404), which are then not logged.
   */
  async publishingChannel(purpose: string, expectClose = false): Promise<Channel> {
    if (this.closed) throw new NotConnectedError('the application has shut down');
    const { connection } = await this.publishing.open();
    return connection.createChannel(purpose, expectClose);
  }

  /**
   * @internal
   * Whether a direct reply-to address may be replied to: its caller is there ('exists'), gone, or the address is
   * refused (a form the broker never hands out, or one the broker closed the probe's channel or connection over).
   * Asked on a connection of its own (ReplyAddressChecker), so that a forged address cannot take the publishing
   * connection down.
   */
  replyAddressState(address: string): Promise<ReplyAddressState> {
    return this.replyAddresses.state(address);
  }

  /**
   * @internal
   * Declares and starts consuming more handlers on this engine, whether or not it has started: the transport's
   * queue in a hybrid application shares the module's connections. Their queues must differ from every other's.
   */
  async attach(handlers: readonly EngineHandler[]): Promise<void> {
    if (this.closed) throw new NotConnectedError('the application has shut down');
    // The attached first, so that a clash names the decorated handler's option and the transport as the owner.
    assertDistinctQueues([...handlers, ...this.allRuntimes.map((r) => r.handler)]);
    const deps = await this.runtimeDeps();
    checkPartitionChannels([...this.allRuntimes.map((r) => r.handler), ...handlers], deps.connection);
    this.keepStores(handlers);
    await this.prepareTables(handlers);
    const added: Runtime[] = [];
    try {
      for (const handler of handlers) {
        const runtime = this.runtimeOf(handler, deps);
        added.push(runtime);
        this.attached.push(runtime);
        this.refusing = undefined;
        await runtime.prepare();
        await runtime.consume();
      }
      if (this.control) await this.control.bind(added.map((r) => r.queue));
      else await this.listenForControl(deps.connection);
    } catch (error) {
      await this.detach(added.map((r) => r.queue));
      throw error;
    }
  }

  /** @internal Stops consuming the attached handlers of these queues (in-flight handlers finish, up to the shutdown timeout). */
  async detach(queues: readonly string[]): Promise<void> {
    const leaving = this.attached.filter((r) => queues.includes(r.queue));
    this.attached = this.attached.filter((r) => !leaving.includes(r));
    this.refusing = undefined;
    await Promise.all(leaving.map((r) => r.stop(this.config.shutdownTimeoutMs)));
  }

  /**
   * @internal
   * The queues that park in this engine, as it runs them now: each handler's (decorated, and the transport's queues
   * attached) with its parking queue and tiers, and the delay ladder's ready queue with its error queue when delays
   * are on, and the queues its partitioned handlers retired (partitions beyond a smaller count, the queue before
   * partitions) until they are deleted. What this application's parked-messages page and ParkedMessages may see.
   */
  parkingQueues(): ScopeQueue[] {
    const handlers = this.allRuntimes
      .flatMap((r) => (r instanceof PartitionedRuntime ? r.parts : [r]))
      .map(({ handler }) => ({
        queue: handler.config.queue,
        errorQueue: handler.config.errorQueue,
        tiers: scheduleTiers(handler), // the patterns' own schedules too: their messages wait there
      }));
    handlers.push(...this.allRuntimes.flatMap((r) => (r instanceof PartitionedRuntime ? r.retired : [])));
    if (this.config.delayPrefix === undefined) return handlers;
    const { readyQueue, errorQueue } = (this.ladderNames ??= planDelayTopology(this.config.delayPrefix, this.config.delayQueueType));
    return [...handlers, { queue: readyQueue, errorQueue, tiers: [] }];
  }

  /**
   * Pauses a handler queue in this process (the operator's kill switch): its consumer is cancelled, so its messages,
   * returning retries included, wait in the broker; handlers in flight finish. It stays paused across reconnections
   * until `resume()`. `by` (required) and `reason` are shown in the log line, the page and `queueStates()`.
   * @example engine.pause('orders', { by: 'alice', reason: 'payments API down, INC-142' })
   */
  pause(queue: string, who: { by: string; reason?: string }): QueueFlowStatus {
    const read = readPauseBy(who?.by, who?.reason);
    if ('problem' in read) throw new RangeError(`Cannot pause "${queue}": ${read.problem}; say who pauses, e.g. { by: 'alice', reason: 'INC-142' }`);
    return this.flowOf(queue).pause(read.by, read.reason);
  }

  /** Ends a pause of `pause()`: the queue is consumed again (or waits for its circuit, if that is open). */
  resume(queue: string, who: { by: string }): QueueFlowStatus {
    const read = readPauseBy(who?.by, undefined);
    if ('problem' in read) throw new RangeError(`Cannot resume "${queue}": ${read.problem}; say who resumes, e.g. { by: 'alice' }`);
    return this.flowOf(queue).resume(read.by);
  }

  /**
   * Pauses the queue here, then tells every other running instance that consumes it (through the control exchange, as
   * `amqp-retry pause` does). The other instances are told best effort: a failure is logged, this one stays paused.
   */
  async pauseEverywhere(queue: string, who: { by: string; reason?: string }): Promise<QueueFlowStatus> {
    const status = this.pause(queue, who);
    const { by, reason } = status.paused ?? who;
    await this.tellOthers({ command: 'pause', queue, by, ...(reason !== undefined && { reason }) });
    return status;
  }

  /** Resumes the queue here and in every other running instance that consumes it (see pauseEverywhere). */
  async resumeEverywhere(queue: string, who: { by: string }): Promise<QueueFlowStatus> {
    const status = this.resume(queue, who);
    await this.tellOthers({ command: 'resume', queue, by: who.by.trim() });
    return status;
  }

  private async tellOthers(command: ControlCommand): Promise<void> {
    // Validated by pause()/resume() already; this instance's own listener gets it too, and changes nothing more.
    await this.publish(CONTROL_EXCHANGE, command.queue, encodeControl(command), { contentType: 'application/json' }).catch((error: unknown) =>
      this.logger.warn(`"${command.queue}" was ${command.command}d here, but the other instances could not be told: ${errorMessage(error)}`),
    );
  }

  /** Every handler queue's state: running, half-open, open (circuit breaker) or paused, with who paused it and since when. */
  queueStates(): QueueFlowStatus[] {
    return this.allRuntimes.flatMap((r) => (r instanceof PartitionedRuntime ? [] : [r.flow.status()]));
  }

  /**
   * A handler queue's flow. A partitioned handler has none to pause: cancelling a partition's consumer hands the
   * partition to another instance's standby consumer while this one's deliveries still run, and the key's order breaks.
   */
  private flowOf(queue: string): QueueFlowControl {
    const runtime = this.allRuntimes.find((r) => r.queue === queue || (r instanceof PartitionedRuntime && r.parts.some((p) => p.queue === queue)));
    if (runtime instanceof PartitionedRuntime) {
      const what = queue === runtime.queue ? `"${queue}" is partitioned` : `"${queue}" is a partition of "${runtime.queue}"`;
      throw new RangeError(
        `${what}, and partitioned handlers cannot be paused (cancelling a partition's consumer would start another instance's on the key's next messages while this one's still run); stop its instances instead (docs/partitions.md)`,
      );
    }
    if (!runtime) {
      const known = this.allRuntimes.map((r) => `"${r.queue}"`).join(', ') || 'none (not started yet?)';
      throw new RangeError(`No handler of this application consumes "${queue}"; its handler queues: ${known}`);
    }
    return runtime.flow;
  }

  /**
   * Each of the engine's queues with its deliveries in flight and the messages handled, retried and parked since the
   * first call: the first call starts counting, so an application whose page is never opened pays nothing for it.
   */
  activity(): QueueActivity[] {
    if (!this.activityCounter) this.observers.add((this.activityCounter = new ActivityCounter()));
    const counter = this.activityCounter;
    const live = this.allRuntimes
      .flatMap((r) => (r instanceof PartitionedRuntime ? r.parts : [r]))
      .map((r) => {
        const flow = r.flow.status();
        const state = queueStateWord(flow.state, flow.paused?.by);
        return { queue: r.queue, inFlight: r.inFlight, ...counter.countsOf(r.queue), ...(state !== undefined && { state }) };
      });
    if (this.forwarder) live.push({ queue: this.forwarder.queue, inFlight: this.forwarder.inFlightCount, ...counter.countsOf(this.forwarder.queue) });
    return live;
  }

  /** Each connection and each consumer, for a health check. */
  health(): EngineHealth {
    const queues = this.allRuntimes.flatMap((r) => (r instanceof PartitionedRuntime ? r.statuses : [r.status]));
    if (this.forwarder) queues.push({ queue: this.forwarder.queue, consuming: this.forwarder.isConsuming });
    const connections = { consume: this.consumeConnection?.isConnected, publish: this.publishing.isConnected };
    return { connections, queues, ...(this.relay && { outbox: this.relay.health() }) };
  }

  /**
   * @internal
   * Starts this instance's heartbeat on the control exchange (see HeartbeatRuntime), and with `fleet` keeps every
   * instance's beats in it (the page's instance). Once; stopped with the consumers.
   */
  startHeartbeat(fleet?: FleetHistory, intervalMs = HEARTBEAT_INTERVAL_MS): void {
    if (this.heartbeat || this.closed) return;
    const collector = new HeartbeatCollector();
    this.observers.add(collector);
    this.heartbeat = new HeartbeatRuntime({
      application: this.config.application,
      intervalMs,
      logger: this.logger,
      collector,
      fleet,
      userId: brokerUser(this.config.urls[0]),
      publishChannel: (purpose) => this.publishingChannel(purpose, true),
      consumeChannel: async (purpose) => (await this.consumingConnection()).createChannel(purpose, true),
      consumed: () => this.health().queues,
      flows: () => this.queueStates(),
      partitions: () => this.partitions(),
    });
    this.heartbeat.start();
  }

  /** Each partitioned handler's partitions as this instance sees them: owners, depths, members (docs/partitions.md). */
  partitions(): PartitionsStatus[] {
    return this.allRuntimes.flatMap((r) => (r instanceof PartitionedRuntime ? [r.status()] : []));
  }

  /** A handler's runtime: a partitioned one runs one runtime per partition, and the membership that spreads them. */
  private runtimeOf(handler: EngineHandler, deps: HandlerRuntimeDeps): Runtime {
    if (handler.config.partitions === undefined) return new HandlerRuntime(handler, deps);
    const { urls, connectTimeoutMs, shutdownTimeoutMs } = this.config;
    return new PartitionedRuntime(handler, {
      ...deps,
      urls,
      connectTimeoutMs,
      handOverTimeoutMs: shutdownTimeoutMs,
      publishingChannel: (purpose) => this.publishingChannel(purpose, true),
    });
  }

  /** @internal Declares every handler's topology and starts consuming, and the delay forwarder when delays are on. */
  async start(handlers: readonly EngineHandler[]): Promise<void> {
    await this.prepare(handlers);
    await this.consume();
  }

  /**
   * @internal
   * Declares every handler's topology (its exchange, queue and tiers) and the delay ladder, without consuming yet:
   * the application may publish from then on (the Nest module does this in its init, before any module's bootstrap).
   */
  async prepare(handlers: readonly EngineHandler[]): Promise<void> {
    // Against the attached ones too: a hybrid app may start its microservices (attach) before its init (prepare).
    assertDistinctQueues([...this.allRuntimes.map((r) => r.handler), ...handlers]);
    this.keepStores(handlers);
    await this.prepareTables(handlers);
    if (handlers.length === 0 && this.config.delayPrefix === undefined) return;
    try {
      const deps = await this.runtimeDeps();
      const { connection, parker } = deps;
      checkPartitionChannels([...this.allRuntimes.map((r) => r.handler), ...handlers], connection);
      const { observers } = this;
      for (const handler of handlers) {
        const runtime = this.runtimeOf(handler, deps);
        this.runtimes.push(runtime);
        this.refusing = undefined;
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

  /** Creates (or checks) the outbox's table and the inboxes' tables, each once. */
  private async prepareTables(handlers: readonly EngineHandler[]): Promise<void> {
    const { outbox } = this.config;
    const tables = [
      ...(outbox
        ? [{ ...outbox, qualified: outbox.sql.outboxName, option: 'outbox.table', ddl: outbox.sql.outboxTables, shape: outbox.sql.outboxShape }]
        : []),
      ...handlers.flatMap(({ config: { inbox } }) =>
        inbox ? [{ ...inbox, qualified: inbox.sql.inboxName, option: 'inbox.table', ddl: inbox.sql.inboxTables, shape: inbox.sql.inboxShape }] : [],
      ),
    ];
    for (const { adapter, sql, qualified, tableName, option, createTables, ddl, shape } of tables) {
      if (this.inboxTables.has(qualified)) continue;
      await prepareTable(adapter, sql, { qualified, shown: tableName, option, create: createTables ? ddl : undefined, shape });
      this.inboxTables.add(qualified);
    }
  }

  /** @internal Starts the outbox relay of this instance (once), when the outbox is configured with `relay` on. */
  async startRelay(): Promise<void> {
    const { outbox } = this.config;
    if (!outbox?.relay || this.relay || this.closed) return;
    const small = relayPoolProblem(outbox.adapter.maxConnections?.(), outbox.concurrency, outbox.adapter.listen !== undefined);
    if (small?.refuse) throw new RetryConfigError('outbox.adapter', small.problem, small.fix);
    if (small) this.logger.warn(`The outbox's adapter ${small.problem}. ${small.fix}`);
    await this.prepareTables([]);
    const relay = new OutboxRelay(
      outbox,
      (exchange, routingKey, content, properties, delayMs) => this.relayPublish(exchange, routingKey, content, properties, delayMs),
      this.logger,
      this.observers,
    );
    this.relay = relay;
    await relay.start();
  }

  /** @internal Starts the consumers of what `prepare()` declared. */
  async consume(): Promise<void> {
    try {
      await this.startRelay();
      for (const runtime of this.runtimes) await runtime.consume();
      if (this.runtimes.length > 0) await this.listenForControl((await this.consumingDeps()).connection);
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

  /**
   * @internal Stops every consumer; handlers in flight finish (up to the shutdown timeout) and settle. Publishing still
   * works. Bounded: a broker that blocks this process's publishing (a memory or disk alarm) answers none of its channel
   * opens and declarations, and a stop that waits on one (a partition's announcement, an outbox round, a control reply)
   * would otherwise hold the shutdown until the alarm clears. Past twice the shutdown timeout (a partition's rebalance
   * under way, then its stop, may each take it) and STOP_MARGIN_MS it returns with a warning; close() then closes the
   * connections under what still waits, which ends it.
   */
  async stopConsuming(): Promise<void> {
    const stopping = this.stopAll();
    const limitMs = 2 * this.config.shutdownTimeoutMs + STOP_MARGIN_MS;
    const stopped = await withinTime(
      stopping.then(() => true),
      limitMs,
      () => new Error('late'),
    ).catch(() => false);
    if (stopped) return;
    this.lateStops.push(stopping.catch(() => undefined));
    this.logger.warn(
      `Stopping the consumers took longer than twice the shutdown timeout and ${STOP_MARGIN_MS} ms (does the broker block ` +
        'this connection? see its memory and disk alarms); the connections close under them',
    );
  }

  private async stopAll(): Promise<void> {
    const runtimes = [...this.runtimes.splice(0), ...this.attached.splice(0)];
    const forwarder = this.forwarder;
    const drain = this.drain;
    this.forwarder = undefined;
    this.drain = undefined;
    const timeout = this.config.shutdownTimeoutMs;
    const relay = this.relay;
    this.relay = undefined;
    const control = this.control;
    this.control = undefined;
    const heartbeat = this.heartbeat;
    this.heartbeat = undefined;
    const replies = this.replies;
    this.replies = undefined;
    await Promise.all([
      ...runtimes.map((r) => r.stop(timeout)),
      forwarder?.stop(timeout),
      drain?.stop(timeout),
      relay?.stop(),
      control?.stop(),
      heartbeat?.stop(),
      closeWhenOpen(replies),
    ]);
  }

  /** Stops consuming (see stopConsuming), then closes the connections; publishing fails from now on. */
  async close(): Promise<void> {
    await this.stopConsuming();
    this.closed = true;
    const consuming = this.consuming;
    this.consuming = undefined;
    this.deps = undefined;
    const stores = this.stores.splice(0);
    await Promise.all([
      this.publishing.close(),
      this.replyAddresses.close(),
      consuming?.then((c) => c.close()).catch(() => undefined),
      ...stores.map((store) =>
        store.close?.().catch((error: unknown) => this.logger.warn(`Closing an idempotency store failed: ${errorMessage(error)}`)),
      ),
    ]);
    // Stops that outlived their bound waited on the connections just closed, which ends them.
    const late = this.lateStops.splice(0);
    if (late.length > 0) await withinTime(Promise.all(late), CLOSE_WAIT_MS, () => new Error('late')).catch(() => undefined);
  }

  /** Starts taking pause and resume commands from other processes for the handler queues (see ControlListener). */
  private async listenForControl(connection: AmqpConnection): Promise<void> {
    if (this.control || this.closed) return;
    const instance = `${hostname()} pid ${process.pid}${this.config.application ? ` (${this.config.application})` : ''}`;
    this.control = new ControlListener({
      connection,
      logger: this.logger,
      instance,
      act: (command) => (command.command === 'pause' ? this.pause(command.queue, command) : this.resume(command.queue, command)),
      reply: async (replyTo, correlationId, body) => {
        // Only to an address the broker says has its sender: a forged one must not close the publishing connection.
        const state = await this.replyAddressState(replyTo);
        if (state.kind !== 'exists') {
          throw new Error(`its reply address ${state.kind === 'gone' ? 'no longer exists' : `cannot be used: ${state.reason}`}`);
        }
        // One channel for the replies, opened again after it was lost with its connection.
        const opening = (this.replies ??= this.publishingChannel('control replies', true).then((c) => {
          c.on('close', () => this.replies === opening && (this.replies = undefined));
          return c;
        }));
        const channel = await opening.catch((error: unknown) => {
          if (this.replies === opening) this.replies = undefined;
          throw error;
        });
        channel.publish('', replyTo, body, { correlationId, contentType: 'application/json' });
      },
    });
    await this.control.start(this.allRuntimes.map((r) => r.queue));
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
      return { connection, parker: new MessageParker(parker, this.logger, this.observers, this.config.parkLogs) };
    })();
    const deps = this.deps;
    deps.catch(() => {
      if (this.deps === deps) this.deps = undefined;
    });
    return deps;
  }

  private consumingConnection(): Promise<AmqpConnection> {
    // After close() nothing may open a connection that nobody would close (a start that close() cut short).
    if (this.closed) return Promise.reject(new NotConnectedError('the application has shut down'));
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
    void this.control?.start(runtimes.map((r) => r.queue)); // its queue died with the connection; warns if it cannot
    const failed = results.flatMap((result, i) => (result.status === 'rejected' ? [{ i, reason: result.reason as unknown }] : []));
    this.logger.log(`Resumed consuming ${runtimes.length + (this.forwarder ? 1 : 0) - failed.length} queue(s)`);
    if (failed.length > 0) {
      const names = failed.map(({ i }) => runtimes[i]?.queue ?? 'the delay forwarder').join(', ');
      throw new Error(`could not resume ${names}: ${failed.map(({ reason }) => errorMessage(reason)).join('; ')}`);
    }
  }
}
