import { openConnection, type AmqpConnection } from '../amqp/amqp.connection.js';
import { ReplyAddressProbe } from '../amqp/reply-address.probe.js';
import type { ModuleConfig } from '../core/config/module.config.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import { directReplyAddressProblem, type ReplyAddressState } from '../core/publish/reply-address.rules.js';

/**
 * Checks a direct reply-to address before anything replies to it. RabbitMQ closes the whole connection that asks
 * about, or (on 3.10) publishes to, an address it cannot decode, and any client can forge a `replyTo`. So a form the
 * broker never hands out is refused without I/O, and the others are probed (a passive declare) on a connection of
 * their own, `<connectionName> replies`: a forged address closes only that one, never the publishing connection.
 */
export class ReplyAddressChecker {
  private connection?: Promise<AmqpConnection>;
  private readonly probe: ReplyAddressProbe;
  private closed = false;

  constructor(
    private readonly config: ModuleConfig,
    private readonly logger: RetryLogger,
  ) {
    this.probe = new ReplyAddressProbe(() => this.connect(), config.publishTimeoutMs);
  }

  state(address: string): Promise<ReplyAddressState> {
    const problem = directReplyAddressProblem(address);
    if (problem !== undefined) return Promise.resolve({ kind: 'refused', reason: `it is no address RabbitMQ hands out (${problem})` });
    return this.probe.state(address);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.probe.close();
    const connection = this.connection;
    this.connection = undefined;
    await connection?.then((c) => c.close()).catch(() => undefined);
  }

  private connect(): Promise<AmqpConnection> {
    if (this.closed) return Promise.reject(new Error('the engine is closed'));
    const opening = (this.connection ??= openConnection(this.config, 'replies', this.logger).then(async (connection) => {
      if (this.closed) await connection.close(); // closed while connecting
      return connection;
    }));
    opening.catch(() => this.connection === opening && (this.connection = undefined)); // the next probe tries again
    return opening;
  }
}
