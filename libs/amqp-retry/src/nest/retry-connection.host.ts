import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { AmqpConnection } from '../amqp/amqp-connection.js';
import { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import type { ModuleConfig } from '../core/module-config.js';
import { RETRY_MODULE_CONFIG } from './retry.constants.js';

interface Opened {
  connection: AmqpConnection;
  /** For RetryPublisher: a user's publish to a missing exchange closes its channel, never the parking one. */
  publisher: ConfirmPublisher;
  parker: ConfirmPublisher;
}

/**
 * Owns the application's AMQP connection and its confirm channels (one to publish, one to park). The connection opens on first use, whoever comes
 * first (the consumers at bootstrap, or a provider publishing from its own lifecycle hook), and closes last.
 */
@Injectable()
export class RetryConnectionHost implements OnApplicationShutdown {
  private readonly logger = new Logger('RetryModule');
  private opened?: Promise<Opened>;

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

  async close(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    if (!opened) return;
    const o = await opened.catch(() => undefined);
    if (!o) return;
    await Promise.all([o.publisher.close(), o.parker.close()]);
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
      return { connection, publisher: new ConfirmPublisher(connection, limits), parker: new ConfirmPublisher(connection, limits) };
    })();
    this.opened.catch(() => (this.opened = undefined)); // a failed connect can be tried again
    return this.opened;
  }
}
