import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { RetryConsumer } from '../amqp/retry.consumer.js';
import { declareTopology, retireStaleTiers } from '../amqp/topology.declarer.js';
import { formatDuration } from '../core/duration.js';
import { planRetryTopology } from '../core/retry-topology.plan.js';
import { RetryConnectionHost } from './retry-connection.host.js';
import { RetryHandlerExplorer, type DiscoveredHandler } from './retry-handler.explorer.js';

/**
 * The lifecycle: handlers are found and validated at module init (a bad configuration fails before anything is
 * declared), declared and consumed at bootstrap (so `app.init()` resolves with every consumer running), and
 * stopped first at shutdown, while the providers they call still work.
 */
@Injectable()
export class RetryOrchestrator implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('RetryModule');
  private handlers: DiscoveredHandler[] = [];
  private readonly consumers: RetryConsumer[] = [];

  constructor(
    private readonly explorer: RetryHandlerExplorer,
    private readonly host: RetryConnectionHost,
  ) {}

  onModuleInit(): void {
    this.handlers = this.explorer.explore();
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.handlers.length === 0) return;
    try {
      const connection = await this.host.connection();
      const parker = await this.host.parker();
      for (const { config } of this.handlers) {
        await declareTopology(connection, planRetryTopology(config));
        const retired = await retireStaleTiers(connection, config.queue, config.delaysMs.length);
        if (retired > 0) this.logger.warn(`"${config.queue}" had ${retired} tier(s) beyond the configured ones; they drain and receive no more`);
      }
      for (const { config, invoke } of this.handlers) {
        const consumer = new RetryConsumer(config, invoke, parker, this.logger);
        this.consumers.push(consumer);
        await consumer.start(connection);
        this.logger.log(
          `Consuming "${config.queue}": ${config.maxAttempts} attempts, retries after ${config.delaysMs.map(formatDuration).join(', ')}, parking in "${config.errorQueue}"`,
        );
      }
    } catch (error) {
      await this.stop();
      await this.host.close();
      throw error;
    }
  }

  async onModuleDestroy(): Promise<void> {
    await this.stop();
  }

  private async stop(): Promise<void> {
    const consumers = this.consumers.splice(0);
    await Promise.all(consumers.map((c) => c.stop()));
  }
}
