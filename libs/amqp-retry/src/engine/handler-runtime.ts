import type { AmqpConnection } from '../amqp/amqp-connection.js';
import type { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import { handlerEntry, recordOrWarn } from '../amqp/handler-registry.js';
import type { MessageParker } from '../amqp/message.parker.js';
import { QueueConsumer } from '../amqp/queue.consumer.js';
import { RetryDeliveryHandler, type DeliveryRouter, type HandlerInvoker } from '../amqp/retry-delivery.handler.js';
import { rebindFirstFailuresIfOwner, takeOverFirstFailures, type Retirement } from '../amqp/tier-retirement.js';
import { TopologyGuard } from '../amqp/topology.guard.js';
import { declareTopology } from '../amqp/topology.declarer.js';
import { formatDuration } from '../core/duration.js';
import type { HandlerConfig } from '../core/handler-config.js';
import type { ReconnectPolicy } from '../core/reconnect.policy.js';
import type { RetryLogger } from '../core/retry-logger.js';
import { scheduleIdOf } from '../core/retry-plan.record.js';
import { planRetryTopology, retryNames, tierQueues } from '../core/retry-topology.plan.js';
import { unsettledDeliveries } from '../core/x-death.parser.js';
import { guaranteedRoutes, withDeliveryGuarantees } from './delivery-guarantees.js';
import type { ObserverHub } from '../observability/observer-hub.js';

const presenceQueueOf = (schedule: HandlerConfig) => retryNames(schedule.queue).presenceQueue(scheduleIdOf(tierQueues(schedule)));

/** The queue's own schedule, then the other schedules its messages use, each once. */
function distinctSchedules(handler: EngineHandler): HandlerConfig[] {
  const byFirstTier = new Map<string, HandlerConfig>();
  for (const schedule of [handler.config, ...(handler.schedules ?? [])]) {
    const first = tierQueues(schedule)[0] ?? '';
    if (!byFirstTier.has(first)) byFirstTier.set(first, schedule);
  }
  return [...byFirstTier.values()];
}

/** A handler to run: its validated configuration, how to call it, and where it is declared (for messages). */
export interface EngineHandler {
  config: HandlerConfig;
  invoke: HandlerInvoker;
  /** "Class.method", or a pattern: named in logs. */
  where: string;
  /** Chooses handler and policy per delivery (the transport's patterns); absent: `invoke` with `config`'s policy. */
  route?: DeliveryRouter;
  /**
   * Schedules besides `config`'s whose tiers this queue's messages use (patterns with delays of their own): declared
   * and kept alive with the queue, but first failures reach them by publishing (see core/first-failure.ts).
   */
  schedules?: HandlerConfig[];
}

export interface HandlerRuntimeDeps {
  connection: AmqpConnection;
  parker: MessageParker;
  recordPublisher: ConfirmPublisher;
  logger: RetryLogger;
  resume: ReconnectPolicy;
  observers?: ObserverHub;
  /** The application's name, recorded with the handler's queue in the registry (RetryModuleOptions.application). */
  application?: string;
}

/** Whether one queue is consumed, for health checks. */
export interface QueueStatus {
  queue: string;
  consuming: boolean;
}

/**
 * One handler at run time: its topology (declared at start, again after a reconnection or a deletion), the consumer
 * of its queue, and a consumer of its schedule's presence queue, which tells other versions' starts that its tiers
 * are in use.
 */
export class HandlerRuntime {
  private readonly consumer: QueueConsumer;
  /** One per schedule: the queue's own first. */
  private readonly presences: Array<{ schedule: HandlerConfig; consumer: QueueConsumer }>;

  constructor(
    readonly handler: EngineHandler,
    private readonly deps: HandlerRuntimeDeps,
  ) {
    const { config } = handler;
    const { connection, logger, resume } = deps;
    const names = retryNames(config.queue);
    const redeclare = () => this.declare();
    const schedules = distinctSchedules(handler);
    const guard = new TopologyGuard(
      connection,
      { exchanges: [names.deadLetterExchange, names.firstFailureExchange, names.returnExchange], queues: schedules.flatMap(tierQueues) },
      redeclare,
      logger,
      `"${config.queue}"`,
    );
    const invoke = withDeliveryGuarantees(config, handler.invoke, logger);
    const delivery = new RetryDeliveryHandler(
      config,
      invoke,
      deps.parker,
      { errorQueue: config.errorQueue, redeclare },
      guard,
      logger,
      handler.route && guaranteedRoutes(config, handler.route, logger),
      deps.observers,
    );
    const isSuspect =
      config.queueType === 'quorum'
        ? (m: { properties: { headers?: Record<string, unknown> } }) => unsettledDeliveries(m.properties.headers, 'quorum') > 0
        : undefined;
    this.consumer = new QueueConsumer(
      { queue: config.queue, prefetch: config.prefetch, connection, logger, resume, redeclare, isSuspect, observers: deps.observers },
      delivery.handle,
    );
    this.presences = schedules.map((schedule) => ({
      schedule,
      consumer: new QueueConsumer(
        { queue: presenceQueueOf(schedule), prefetch: 1, connection, logger, resume, redeclare: () => this.declarePresence(schedule) },
        async (_message, settle) => settle.ack(), // nobody publishes there; should anyone, it is dropped
      ),
    }));
  }

  get queue(): string {
    return this.handler.config.queue;
  }

  /** True while the queue's consumer and every schedule's presence consumer run. */
  get isConsuming(): boolean {
    return this.consumer.isConsuming && this.presences.every((p) => p.consumer.isConsuming);
  }

  get status(): QueueStatus {
    return { queue: this.queue, consuming: this.isConsuming };
  }

  /** First start, before consuming: declares, marks the schedule as in use, takes first failures, retires what nobody runs. */
  async prepare(): Promise<void> {
    const { config } = this.handler;
    // The other schedules first: once their presence queues are consumed, the take-over below sees them in use.
    for (const { schedule, consumer } of [...this.presences].reverse()) {
      await declareTopology(this.deps.connection, planRetryTopology(schedule, { firstFailures: false }));
      await this.declarePresence(schedule);
      await consumer.start();
    }
    this.report(await takeOverFirstFailures(this.deps.connection, this.deps.recordPublisher, config));
    // For the CLI: a failure is logged and the start goes on (see recordOrWarn).
    await recordOrWarn(
      () => this.deps.connection.createChannel('handler registry', true),
      this.deps.recordPublisher,
      handlerEntry(config, this.deps.application),
      this.deps.logger,
    );
  }

  async consume(): Promise<void> {
    const { config } = this.handler;
    await this.consumer.start();
    this.deps.logger.log(
      `Consuming "${config.queue}": ${config.maxAttempts} attempts, retries after ${config.delaysMs.map(formatDuration).join(', ')}, parking in "${config.errorQueue}"`,
    );
  }

  /**
   * After a reconnection: declares again (first failures only if no newer version took them) and consumes. The
   * business consumer does not wait for the presence marker: that is a classic queue, which on a cluster lives on one
   * node, and while that node is down it cannot be declared anywhere (404 "home node ... is down"); the failure is
   * thrown after the consumer started, so that the connection's recovery declares the marker again later.
   */
  async resume(): Promise<void> {
    await this.declare();
    const presences = (async () => {
      for (const { schedule } of this.presences) await this.declarePresence(schedule);
      await Promise.all(this.presences.map((p) => p.consumer.start()));
    })();
    const [presence, consumer] = await Promise.allSettled([presences, this.consumer.start()]);
    if (consumer.status === 'rejected') throw consumer.reason;
    if (presence.status === 'rejected') throw presence.reason;
  }

  async stop(timeoutMs: number): Promise<void> {
    await this.consumer.stop(timeoutMs);
    await Promise.all(this.presences.map((p) => p.consumer.stop(0)));
  }

  private async declare(): Promise<void> {
    for (const { schedule } of this.presences) await declareTopology(this.deps.connection, planRetryTopology(schedule, { firstFailures: false }));
    await rebindFirstFailuresIfOwner(this.deps.connection, this.handler.config);
  }

  /** Auto-deleted with its last consumer: it exists exactly while some instance runs this schedule. */
  private async declarePresence(schedule: HandlerConfig): Promise<void> {
    const channel = await this.deps.connection.createChannel('retry topology declaration');
    try {
      await channel.assertQueue(presenceQueueOf(schedule), { durable: true, autoDelete: true });
    } finally {
      await channel.close().catch(() => undefined);
    }
  }

  private report({ deleted, draining, kept }: Retirement): void {
    const { queue } = this.handler.config;
    const { logger } = this.deps;
    if (deleted.length > 0) logger.log(`"${queue}": deleted the empty tiers of an earlier configuration: ${deleted.join(', ')}`);
    if (draining.length > 0)
      logger.warn(`"${queue}": tiers of an earlier configuration still hold messages and drain to the queue: ${draining.join(', ')}`);
    if (kept.length > 0) logger.log(`"${queue}": another running version uses these tiers; they stay: ${kept.join(', ')}`);
  }
}
