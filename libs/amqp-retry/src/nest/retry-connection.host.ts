import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { AmqpConnection } from '../amqp/amqp-connection.js';
import { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import { declareTopology } from '../amqp/topology.declarer.js';
import { planDelayTopology, type DelayTopology } from '../core/delay.plan.js';
import type { ModuleConfig } from '../core/module-config.js';
import { RETRY_MODULE_CONFIG } from './retry.constants.js';

interface Opened {
  connection: AmqpConnection;
  /** For RetryPublisher: a user's publish to a missing exchange closes its channel, never the parking one. */
  publisher: ConfirmPublisher;
  parker: ConfirmPublisher;
  /** For the delay forwarder, whose targets may have been deleted since the message was delayed. */
  forwarder: ConfirmPublisher;
}

/**
 * Owns the application's AMQP connection, its confirm channels (to publish, to park, to forward delayed messages)
 * and the delay ladder's declaration. The connection opens on first use, whoever comes first (the consumers at
 * bootstrap, or a provider publishing from its own lifecycle hook), and closes last.
 */
@Injectable()
export class RetryConnectionHost implements OnApplicationShutdown {
  private readonly logger = new Logger('RetryModule');
  private opened?: Promise<Opened>;
  private ladder?: Promise<DelayTopology>;

  constructor(@Inject(RETRY_MODULE_CONFIG) private readonly config: ModuleConfig) {}

  connection(): Promise<AmqpConnection> {
    return this.open().then((o) => o.connection);
  }

  publisher(): Promise<ConfirmPublisher> {
    return this.open().then((o) => o.publisher);
  }

  parker(): Promise<ConfirmPublisher> {
    return this.open().then((o) => o.parker);
  }

  forwarder(): Promise<ConfirmPublisher> {
    return this.open().then((o) => o.forwarder);
  }

  /** The delay ladder's prefix; throws when delayed delivery is off. */
  delayPrefix(): string {
    if (this.config.delayPrefix === undefined) {
      throw new Error('Delayed delivery is off (RetryModule option delayedDelivery: false); publish without a delay, or turn it on');
    }
    return this.config.delayPrefix;
  }

  /**
   * The delay ladder, declared once per connection (again after a reconnection, the broker may have lost it);
   * undefined when delayed delivery is off. The first delayed publish may come before the bootstrap that starts the
   * forwarder, so whoever comes first declares it.
   */
  async delayLadder(): Promise<DelayTopology | undefined> {
    const prefix = this.config.delayPrefix;
    if (prefix === undefined) return undefined;
    if (this.ladder) return this.ladder;
    const declaring = this.connection().then(async (connection) => {
      const ladder = planDelayTopology(prefix);
      await declareTopology(connection, ladder);
      return ladder;
    });
    this.ladder = declaring;
    declaring.catch(() => {
      if (this.ladder === declaring) this.ladder = undefined; // a failed declaration can be tried again
    });
    return declaring;
  }

  async close(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    this.ladder = undefined;
    if (!opened) return;
    const o = await opened.catch(() => undefined);
    if (!o) return;
    await Promise.all([o.publisher.close(), o.parker.close(), o.forwarder.close()]);
    await o.connection.close();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  private open(): Promise<Opened> {
    this.opened ??= (async () => {
      const { url, reconnect, publishTimeoutMs, publishBufferSize, connectionName } = this.config;
      const name = connectionName ?? `nestjs-amqp-retry (pid ${process.pid})`;
      const connection = await AmqpConnection.open({ url, reconnect, name }, this.logger);
      const limits = { timeoutMs: publishTimeoutMs, bufferSize: publishBufferSize };
      connection.onReconnect(async () => void (this.ladder = undefined)); // registered first: runs before the orchestrator's
      const publisher = () => new ConfirmPublisher(connection, limits);
      return { connection, publisher: publisher(), parker: publisher(), forwarder: publisher() };
    })();
    this.opened.catch(() => (this.opened = undefined)); // a failed connect can be tried again
    return this.opened;
  }
}
