import { closeWhenOpen, SharedChannel } from './channel-close.settler.js';
import type { Channel, ConsumeMessage, Options } from 'amqplib';
import { errorMessage } from '../core/text/error-message.format.js';
import { DIRECT_REPLY_QUEUE } from '../core/publish/reply-address.rules.js';

/** What the requests of a DirectReplyChannel learn from it. */
export interface ReplyListener {
  /** A reply arrived (its `correlationId` names the request). */
  reply(message: ConsumeMessage): void;
  /** A request came back unrouted: no queue took it. */
  returned(correlationId: string): void;
  /** The channel is gone: no reply will come for the requests sent on it. */
  lost(reason: string): void;
}

/**
 * One channel for request-response: requests go out with `replyTo: amq.rabbitmq.reply-to` and `mandatory` (a request
 * no queue takes comes back at once, not at the caller's timeout); replies arrive on it. Opened again after a loss.
 */
export class DirectReplyChannel {
  private readonly channel = new SharedChannel<Channel>();

  constructor(
    private readonly open: () => Promise<Channel>,
    private readonly listener: ReplyListener,
  ) {}

  async send(exchange: string, routingKey: string, content: Buffer, options: Options.Publish): Promise<void> {
    const channel = await this.channel.get((forget) => this.start(forget));
    channel.publish(exchange, routingKey, content, { ...options, mandatory: true, replyTo: DIRECT_REPLY_QUEUE });
  }

  async close(): Promise<void> {
    await closeWhenOpen(this.channel.take());
  }

  private async start(forget: () => void): Promise<Channel> {
    const channel = await this.open();
    // The broker's reason when it closed the channel over a request (a missing exchange, a refused permission).
    let closedBecause: string | undefined;
    channel.on('error', (error: Error) => (closedBecause = error.message));
    channel.on('close', () => {
      forget();
      const why = closedBecause === undefined ? '(connection lost or client closed)' : `(${closedBecause})`;
      this.listener.lost(`the channel for requests and replies closed ${why}; no reply comes for the requests sent on it`);
    });
    channel.on('return', (message: ConsumeMessage) => {
      const id: unknown = message.properties.correlationId;
      if (typeof id === 'string') this.listener.returned(id);
    });
    try {
      await channel.consume(DIRECT_REPLY_QUEUE, (message) => message && this.listener.reply(message), { noAck: true });
    } catch (error) {
      await channel.close().catch(() => undefined);
      throw new Error(`could not consume ${DIRECT_REPLY_QUEUE}: ${errorMessage(error)}`, { cause: error });
    }
    return channel;
  }
}
