import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { AmqpConnection } from '../amqp/amqp-connection.js';
import { QueueConsumer } from '../amqp/queue.consumer.js';
import { RetryDeliveryHandler } from '../amqp/retry-delivery.handler.js';
import { declareTopology, retireStaleTiers } from '../amqp/topology.declarer.js';
import { formatDuration } from '../core/duration.js';
import type { ModuleConfig } from '../core/module-config.js';
import { planRetryTopology } from '../core/retry-topology.plan.js';
import { RetryConnectionHost } from './retry-connection.host.js';
import { RetryHandlerExplorer, type DiscoveredHandler } from './retry-handler.explorer.js';
import { RETRY_MODULE_CONFIG } from './retry.constants.js';

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
    if (this.handlers.length === 0) return;
    try {
      const connection = await this.host.connection();
      const parker = await this.host.parker();
      await this.declareAll(connection);
      for (const { config, invoke } of this.handlers) {
        const delivery = new RetryDeliveryHandler(config, invoke, parker, this.logger);
        const consumer = new QueueConsumer(
          {
            queue: config.queue,
            prefetch: config.prefetch,
            connection,
            logger: this.logger,
            resume: this.config.reconnect,
            redeclare: () => declareTopology(connection, planRetryTopology(config)),
          },
          delivery.handle,
        );
        this.consumers.push(consumer);
        await consumer.start();
        this.logger.log(
          `Consuming "${config.queue}": ${config.maxAttempts} attempts, retries after ${config.delaysMs.map(formatDuration).join(', ')}, parking in "${config.errorQueue}"`,
        );
      }
      connection.onReconnect(async () => {
        await this.declareAll(connection);
        await Promise.all(this.consumers.map((c) => c.start()));
        this.logger.log(`Resumed consuming ${this.consumers.length} queue(s)`);
      });
    } catch (error) {
      await this.stop();
      await this.host.close();
      throw error;
    }
  }

  async onModuleDestroy(): Promise<void> {
    await this.stop();
  }

  private async declareAll(connection: AmqpConnection): Promise<void> {
    for (const { config } of this.handlers) {
      await declareTopology(connection, planRetryTopology(config));
      const retired = await retireStaleTiers(connection, config.queue, config.delaysMs.length);
      if (retired > 0) this.logger.warn(`"${config.queue}" had ${retired} tier(s) beyond the configured ones; they drain and receive no more`);
    }
  }

  private async stop(): Promise<void> {
    const consumers = this.consumers.splice(0);
    await Promise.all(consumers.map((c) => c.stop(this.config.shutdownTimeoutMs)));
  }
}
