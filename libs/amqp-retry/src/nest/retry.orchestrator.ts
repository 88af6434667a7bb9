import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { AmqpConnection } from '../amqp/amqp-connection.js';
import { DelayForwardHandler } from '../amqp/delay-forward.handler.js';
import { MessageParker } from '../amqp/message.parker.js';
import { QueueConsumer, type DeliveryHandler } from '../amqp/queue.consumer.js';
import { RetryDeliveryHandler } from '../amqp/retry-delivery.handler.js';
import { retireOldTiers } from '../amqp/tier-retirement.js';
import { declareTopology } from '../amqp/topology.declarer.js';
import { formatDuration } from '../core/duration.js';
import type { ModuleConfig } from '../core/module-config.js';
import { planRetryTopology, tierQueues } from '../core/retry-topology.plan.js';
import { RetryConnectionHost } from './retry-connection.host.js';
import { RetryHandlerExplorer, type DiscoveredHandler } from './retry-handler.explorer.js';
import { RETRY_MODULE_CONFIG } from './retry.constants.js';

/** Due delayed messages in flight at once in the forwarder: enough for thousands a second over a few ms of confirms. */
const FORWARDER_PREFETCH = 100;

/**
 * The lifecycle: handlers are found and validated at module init (a bad configuration fails before anything is
 * declared), declared and consumed at bootstrap (so `app.init()` resolves with every consumer running), and
 * stopped first at shutdown, while the providers they call still work. After a reconnection the topology is
 * declared again (the broker may have lost it) and every consumer resumes.
 */
@Injectable()
export class RetryOrchestrator implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('RetryModule');
  private handlers: DiscoveredHandler[] = [];
  private readonly consumers: QueueConsumer[] = [];

  constructor(
    private readonly explorer: RetryHandlerExplorer,
    private readonly host: RetryConnectionHost,
    @Inject(RETRY_MODULE_CONFIG) private readonly config: ModuleConfig,
  ) {}

  onModuleInit(): void {
    this.handlers = this.explorer.explore();
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.handlers.length === 0 && this.config.delayPrefix === undefined) return;
    try {
      const connection = await this.host.connection();
      // Registered first, so that a connection lost while this method still runs recovers what was started.
      connection.onReconnect(async () => {
        await this.declareAll(connection);
        await this.host.delayLadder();
        await Promise.all(this.consumers.map((c) => c.start()));
        this.logger.log(`Resumed consuming ${this.consumers.length} queue(s)`);
      });
      await this.declareAll(connection);
      const parker = new MessageParker(await this.host.parker(), this.logger);
      for (const { config, invoke } of this.handlers) {
        const delivery = new RetryDeliveryHandler(config, invoke, parker, this.logger);
        const redeclare = () => declareTopology(connection, planRetryTopology(config));
        await this.startConsumer(connection, config.queue, config.prefetch, redeclare, delivery.handle);
        this.logger.log(
          `Consuming "${config.queue}": ${config.maxAttempts} attempts, retries after ${config.delaysMs.map(formatDuration).join(', ')}, parking in "${config.errorQueue}"`,
        );
      }
      const ladder = await this.host.delayLadder();
      if (ladder) {
        const forward = new DelayForwardHandler(ladder, await this.host.forwarder(), parker, this.logger);
        await this.startConsumer(connection, ladder.readyQueue, FORWARDER_PREFETCH, () => declareTopology(connection, ladder), forward.handle);
        this.logger.log(`Forwarding due delayed messages from "${ladder.readyQueue}"`);
      }
    } catch (error) {
      await this.stop();
      await this.host.close();
      throw error;
    }
  }

  private async startConsumer(
    connection: AmqpConnection,
    queue: string,
    prefetch: number,
    redeclare: () => Promise<unknown>,
    handle: DeliveryHandler,
  ) {
    const consumer = new QueueConsumer({ queue, prefetch, connection, logger: this.logger, resume: this.config.reconnect, redeclare }, handle);
    this.consumers.push(consumer);
    await consumer.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.stop();
  }

  private async declareAll(connection: AmqpConnection): Promise<void> {
    const publisher = await this.host.parker();
    for (const { config } of this.handlers) {
      await declareTopology(connection, planRetryTopology(config));
      const { deleted, draining } = await retireOldTiers(connection, publisher, config.queue, tierQueues(config));
      if (deleted.length > 0) this.logger.log(`"${config.queue}": deleted the empty tiers of an earlier configuration: ${deleted.join(', ')}`);
      if (draining.length > 0) {
        this.logger.warn(`"${config.queue}": tiers of an earlier configuration still hold messages and drain to the queue: ${draining.join(', ')}`);
      }
    }
  }

  private async stop(): Promise<void> {
    const consumers = this.consumers.splice(0);
    await Promise.all(consumers.map((c) => c.stop(this.config.shutdownTimeoutMs)));
  }
}
