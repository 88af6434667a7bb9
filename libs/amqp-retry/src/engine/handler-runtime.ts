import type { AmqpConnection } from '../amqp/amqp-connection.js';
import type { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import type { MessageParker } from '../amqp/message.parker.js';
import { QueueConsumer } from '../amqp/queue.consumer.js';
import { RetryDeliveryHandler, type HandlerInvoker } from '../amqp/retry-delivery.handler.js';
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
import { withDeliveryGuarantees } from './delivery-guarantees.js';

/** A handler to run: its validated configuration, how to call it, and where it is declared (for messages). */
export interface EngineHandler {
  config: HandlerConfig;
  invoke: HandlerInvoker;
  /** "Class.method", or a pattern: named in logs. */
  where: string;
}

export interface HandlerRuntimeDeps {
  connection: AmqpConnection;
  parker: MessageParker;
  recordPublisher: ConfirmPublisher;
  logger: RetryLogger;
  resume: ReconnectPolicy;
}

/**
 * One handler at run time: its topology (declared at start, again after a reconnection or a deletion), the consumer
 * of its queue, and a consumer of its schedule's presence queue, which tells other versions' starts that its tiers
 * are in use.
 */
export class HandlerRuntime {
  private readonly consumer: QueueConsumer;
  private readonly presence: QueueConsumer;

  constructor(
    private readonly handler: EngineHandler,
    private readonly deps: HandlerRuntimeDeps,
  ) {
    const { config } = handler;
    const { connection, logger, resume } = deps;
    const names = retryNames(config.queue);
    const redeclare = () => this.declare();
    const guard = new TopologyGuard(
      connection,
      { exchanges: [names.deadLetterExchange, names.firstFailureExchange, names.returnExchange], queues: tierQueues(config) },
      redeclare,
      logger,
      `"${config.queue}"`,
    );
    const invoke = withDeliveryGuarantees(config, handler.invoke, logger);
    const delivery = new RetryDeliveryHandler(config, invoke, deps.parker, { errorQueue: config.errorQueue, redeclare }, guard, logger);
    const isSuspect =
      config.queueType === 'quorum'
        ? (m: { properties: { headers?: Record<string, unknown> } }) => unsettledDeliveries(m.properties.headers, 'quorum') > 0
        : undefined;
    this.consumer = new QueueConsumer(
      { queue: config.queue, prefetch: config.prefetch, connection, logger, resume, redeclare, isSuspect },
      delivery.handle,
    );
    const presenceQueue = names.presenceQueue(scheduleIdOf(tierQueues(config)));
    this.presence = new QueueConsumer(
      { queue: presenceQueue, prefetch: 1, connection, logger, resume, redeclare: () => this.declarePresence() },
      async (_message, settle) => settle.ack(), // nobody publishes there; should anyone, it is dropped
    );
  }

  get queue(): string {
    return this.handler.config.queue;
  }

  /** True while both consumers run. */
  get isConsuming(): boolean {
    return this.consumer.isConsuming && this.presence.isConsuming;
  }

  /** First start, before consuming: declares, marks the schedule as in use, takes first failures, retires what nobody runs. */
  async prepare(): Promise<void> {
    const { config } = this.handler;
    await declareTopology(this.deps.connection, planRetryTopology(config, { firstFailures: false }));
    await this.declarePresence();
    await this.presence.start();
    this.report(await takeOverFirstFailures(this.deps.connection, this.deps.recordPublisher, config));
  }

  async consume(): Promise<void> {
    const { config } = this.handler;
    await this.consumer.start();
    this.deps.logger.log(
      `Consuming "${config.queue}": ${config.maxAttempts} attempts, retries after ${config.delaysMs.map(formatDuration).join(', ')}, parking in "${config.errorQueue}"`,
    );
  }

  /** After a reconnection: declares again (first failures only if no newer version took them) and consumes. */
  async resume(): Promise<void> {
    await this.declare();
    await this.declarePresence();
    await Promise.all([this.presence.start(), this.consumer.start()]);
  }

  async stop(timeoutMs: number): Promise<void> {
    await this.consumer.stop(timeoutMs);
    await this.presence.stop(0);
  }

  private async declare(): Promise<void> {
    await declareTopology(this.deps.connection, planRetryTopology(this.handler.config, { firstFailures: false }));
    await rebindFirstFailuresIfOwner(this.deps.connection, this.handler.config);
  }

  /** Auto-deleted with its last consumer: it exists exactly while some instance runs this schedule. */
  private async declarePresence(): Promise<void> {
    const channel = await this.deps.connection.createChannel('retry topology declaration');
    try {
      await channel.assertQueue(retryNames(this.handler.config.queue).presenceQueue(scheduleIdOf(tierQueues(this.handler.config))), {
        durable: true,
        autoDelete: true,
      });
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
