import type { Channel, Options } from 'amqplib';
import { resolveModuleConfig, type ModuleConfig } from '../core/config/module.config.js';
import type { RetryModuleOptions } from '../core/config/retry.options.js';
import { maskingLogger } from '../core/text/credentials.mask.js';
import type { ScopeQueue } from '../core/parking/parked.scope.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { ObserverHub } from '../core/observe/observer.hub.js';
import type { RetryObserver } from '../core/observe/retry.observer.js';
import type { ReplyAddressState } from '../core/publish/reply-address.rules.js';
import type { OutboxMessage } from '../core/outbox/outbox.message.js';
import { ShutdownBound } from './shutdown.bound.js';
import type { EngineHandler } from './handler.runtime.js';
import type { FleetHistory } from '../core/observe/heartbeat/fleet.history.js';
import type { PartitionsStatus } from './partitions.runtime.js';
import { PublishingSide, type SendObserved } from './publishing.side.js';
import { ReplyAddressChecker } from './reply-address.checker.js';
import { OutboxSide, type OutboxBacklog, type OutboxReceipt } from './outbox.side.js';
import type { QueueFlowStatus } from './queue-flow.control.js';
import { ConsumingSide } from './consuming.side.js';
import { explainRefusal, parkingQueues, type EngineHealth, type QueueActivity } from './engine.views.js';

/**
 * The retry engine, without Nest: the Nest module and the microservices transport are thin adapters over it. A façade over its sides: consuming,
 * publishing (each on a connection of its own), pause and resume, the outbox, and the checker of direct reply-to addresses.
 */
export class RetryEngine {
  private readonly publishing: PublishingSide;
  private readonly consuming: ConsumingSide;
  private readonly outbox: OutboxSide;
  private readonly replyAddresses: ReplyAddressChecker;
  /** Read by the testing harness (RetryHarness), which adds its recorder. */
  private readonly observers: ObserverHub;
  private closed = false;
  private readonly shutdown: ShutdownBound;

  private constructor(
    private readonly config: ModuleConfig,
    logger: RetryLogger,
    observers: readonly RetryObserver[] = [],
  ) {
    // Every line masked: a log line may quote a broker URL or an error text holding `user:password@`.
    const masked = maskingLogger(logger);
    this.shutdown = new ShutdownBound(config.shutdownTimeoutMs, masked);
    this.observers = new ObserverHub(observers, masked);
    this.publishing = new PublishingSide(config, masked, this.observers);
    this.replyAddresses = new ReplyAddressChecker(config, masked);
    this.outbox = new OutboxSide(config, this.publishing, masked, this.observers);
    const sides = { config, logger: masked, observers: this.observers, publishing: this.publishing, outbox: this.outbox };
    this.consuming = new ConsumingSide({ ...sides, replyAddresses: this.replyAddresses });
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
   * Publishes `content` and resolves once the broker has confirmed it (with `mandatory`: once a queue took it). With `delayMs` > 0 it goes through
   * the delay ladder and is confirmed when it enters it; the copies waiting there are always persistent, whatever `properties.persistent` says.
   */
  publish(exchange: string, routingKey: string, content: Buffer, properties: Options.Publish, delayMs = 0): Promise<void> {
    return this.publishing.publish('publisher', { exchange, routingKey, content, properties }, delayMs);
  }

  /**
   * @internal Sends an application's message on a channel of the caller's (RetryClient's requests) as `publish` is
   * observed: `send` gets the properties with the observers' headers (a tracer's `traceparent`).
   */
  sendObserved(exchange: string, routingKey: string, properties: Options.Publish, send: SendObserved): Promise<void> {
    return this.publishing.sendObserved({ exchange, routingKey, properties }, send);
  }

  /**
   * @internal Throws the TypeError or RangeError `publish` would reject with for these properties (each checked by amqplib's and the broker's rules;
   * a `userId` must be the user of a broker URL), so that a channel of the caller's own is never closed by the broker for one of them.
   */
  checkPublishProperties(properties: Options.Publish): void {
    this.publishing.check(properties);
  }

  /** Writes `message` to the outbox in the caller's transaction `tx` (see OutboxPublisher); the relay publishes it once that transaction commits. */
  writeToOutbox<Tx>(tx: Tx, message: OutboxMessage): Promise<OutboxReceipt> {
    return this.outbox.write(tx, message);
  }

  /** @internal The outbox's backlog now and this instance's relay; undefined without an outbox (the page, metrics). */
  outboxBacklog(): Promise<OutboxBacklog | undefined> {
    return this.outbox.backlog();
  }

  /** @internal The prefix of the delay ladder's names (with `.quorum` for a quorum ladder); throws when delayed delivery is off. */
  delayLadderPrefix(): string {
    return this.publishing.delayLadderPrefix();
  }

  /** @internal The application name of the module (RetryModuleOptions.application), if given. */
  get application(): string | undefined {
    return this.config.application;
  }

  /** True while the consuming connection is up and every consumer consumes (or there is nothing to consume). */
  get isConsuming(): boolean {
    return this.consuming.isConsuming;
  }

  /** Whether a handler queue refuses publishes once full: only then is a nacked publish worth explaining. */
  get hasQueuesThatRefuse(): boolean {
    return this.consuming.hasQueuesThatRefuse;
  }

  /** A nacked publish's error, naming the full handler queues that refuse publishes and that it may reach; any other error as it is. */
  explainRefusal(error: unknown, exchange: string, routingKey: string): unknown {
    return explainRefusal(error, exchange, routingKey, this.consuming.all);
  }

  /** @internal Opens the publishing connection now rather than at the first publish, so that a wrong URL fails early. */
  async connectPublisher(): Promise<void> {
    await this.publishing.open(); // refused once closed, as a publish is
  }

  /** @internal A plain channel on the publishing connection (direct reply-to); `expectClose`: its broker closes are not logged. */
  publishingChannel(purpose: string, expectClose = false): Promise<Channel> {
    return this.publishing.channel(purpose, expectClose);
  }

  /** @internal Whether a direct reply-to address may be replied to (ReplyAddressChecker: its own connection). */
  replyAddressState(address: string): Promise<ReplyAddressState> {
    return this.replyAddresses.state(address);
  }

  /** @internal Declares and consumes more handlers, started or not (the transport's queue in a hybrid application); queues must differ. */
  attach(handlers: readonly EngineHandler[]): Promise<void> {
    return this.consuming.attach(handlers); // refused once closed
  }

  /** @internal Stops consuming the attached handlers of these queues (in-flight handlers finish, up to the shutdown timeout). */
  detach(queues: readonly string[]): Promise<void> {
    return this.consuming.detach(queues);
  }

  /** @internal The queues that park in this engine, with their parking queues and tiers (ParkedMessages' scope). */
  parkingQueues(): ScopeQueue[] {
    return parkingQueues(this.consuming.all, this.config);
  }

  /**
   * Pauses a handler queue in this process (the operator's kill switch): its messages wait in the broker, handlers in flight finish; it stays paused
   * across reconnections until `resume()`. `by` and `reason` are shown in the log line, the page and `queueStates()`.
   * @example engine.pause('orders', { by: 'alice', reason: 'payments API down, INC-142' })
   */
  pause(queue: string, who: { by: string; reason?: string }): QueueFlowStatus {
    return this.consuming.control.pause(queue, who);
  }

  /** Ends a pause of `pause()`: the queue is consumed again (or waits for its circuit, if that is open). */
  resume(queue: string, who: { by: string }): QueueFlowStatus {
    return this.consuming.control.resume(queue, who);
  }

  /** Pauses the queue here, then tells every other running instance that consumes it, best effort (as `amqp-retry pause` does). */
  pauseEverywhere(queue: string, who: { by: string; reason?: string }): Promise<QueueFlowStatus> {
    return this.consuming.control.pauseEverywhere(queue, who);
  }

  /** Resumes the queue here and in every other running instance that consumes it (see pauseEverywhere). */
  resumeEverywhere(queue: string, who: { by: string }): Promise<QueueFlowStatus> {
    return this.consuming.control.resumeEverywhere(queue, who);
  }

  /** Every handler queue's state: running, half-open, open (circuit breaker) or paused, with who paused it and since when. */
  queueStates(): QueueFlowStatus[] {
    return this.consuming.queueStates();
  }

  /** Each queue's deliveries in flight and messages handled, retried and parked since the first call (which starts counting). */
  activity(): QueueActivity[] {
    return this.consuming.activity();
  }

  /** Each connection and each consumer, for a health check. */
  health(): EngineHealth {
    const connections = { consume: this.consuming.isConnected, publish: this.publishing.isConnected };
    const outbox = this.outbox.relayHealth;
    return { connections, queues: this.consuming.statuses(), ...(outbox && { outbox }) };
  }

  /** @internal Starts this instance's heartbeat; with `fleet` (the page's instance) keeps every instance's beats. */
  startHeartbeat(fleet?: FleetHistory, intervalMs?: number): void {
    this.consuming.startHeartbeat(fleet, intervalMs);
  }

  /** Each partitioned handler's partitions as this instance sees them: owners, depths, members (docs/partitions.md). */
  partitions(): PartitionsStatus[] {
    return this.consuming.partitions();
  }

  /** @internal Declares every handler's topology and starts consuming. */
  async start(handlers: readonly EngineHandler[]): Promise<void> {
    await this.prepare(handlers);
    await this.consume();
  }

  /** @internal Declares every handler's topology and the delay ladder without consuming yet: publishing works from then on. */
  async prepare(handlers: readonly EngineHandler[]): Promise<void> {
    await this.consuming.admit(handlers);
    await this.closingOnFailure(() => this.consuming.prepare(handlers));
  }

  /** @internal Starts the relay and the consumers of what `prepare()` declared. */
  consume(): Promise<void> {
    return this.closingOnFailure(async () => {
      if (!this.closed) await this.outbox.startRelay();
      await this.consuming.consume();
    });
  }

  /**
   * @internal Stops every consumer; handlers in flight finish (up to the shutdown timeout) and settle. Publishing still
   * works. Bounded (ShutdownBound): past its bound it returns with a warning, and close() closes the connections under it.
   */
  async stopConsuming(): Promise<void> {
    await this.shutdown.stop(Promise.all([this.consuming.stop(), this.outbox.stop(), this.consuming.control.stop()]));
  }

  /** Stops consuming (see stopConsuming), then closes the connections; publishing fails from now on. */
  async close(): Promise<void> {
    await this.stopConsuming();
    this.closed = true;
    await Promise.all([this.publishing.close(), this.replyAddresses.close(), this.consuming.close()]);
    await this.shutdown.closed();
  }

  private closingOnFailure(step: () => Promise<void>): Promise<void> {
    return step().catch(async (error: unknown) => {
      await this.close();
      throw error;
    });
  }
}
