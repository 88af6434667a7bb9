import { Logger } from '@nestjs/common';
import amqp, { type Channel, type ChannelModel, type ConfirmChannel } from 'amqplib';
import { maskUrl } from '../core/module-config.js';

/**
 * One AMQP connection and the channels made on it. Every channel gets an 'error' listener: without one, a channel
 * closed by the broker (a 406, a 404) would tear down the whole connection.
 */
export class AmqpConnection {
  private closing = false;

  private constructor(
    private readonly model: ChannelModel,
    private readonly logger: Logger,
  ) {
    model.on('error', (error: Error) => this.logger.error(`AMQP connection error: ${error.message}`));
    model.on('close', () => {
      if (!this.closing) this.logger.error('AMQP connection closed by the broker or the network');
    });
  }

  /**
   * Connects with Nagle's algorithm off: acks, nacks and confirms are small frames, and with Nagle on each waits
   * for the next packet (DESIGN.md section 6: a 200 ms retry came back 60 ms late instead of 12 ms).
   */
  static async open(url: string, connectionName: string, logger: Logger): Promise<AmqpConnection> {
    try {
      const model = await amqp.connect(url, { noDelay: true, clientProperties: { connection_name: connectionName } });
      return new AmqpConnection(model, logger);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new Error(`Could not connect to RabbitMQ at ${maskUrl(url)}: ${reason}`, { cause: error });
    }
  }

  /** `expectClose`: the caller provokes a broker close (a passive declare that may 404), so it is not logged. */
  async createChannel(purpose: string, expectClose = false): Promise<Channel> {
    const channel = await this.model.createChannel();
    return expectClose ? channel.on('error', () => undefined) : this.watch(channel, purpose);
  }

  /** Confirm channels report their failures through the publishes they fail, hence no logging here. */
  async createConfirmChannel(): Promise<ConfirmChannel> {
    const channel = await this.model.createConfirmChannel();
    return channel.on('error', () => undefined);
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await this.model.close().catch(() => undefined); // already closed: nothing left to release
  }

  private watch<C extends Channel>(channel: C, purpose: string): C {
    channel.on('error', (error: Error) => this.logger.error(`AMQP channel for ${purpose} closed: ${error.message}`));
    return channel;
  }
}
