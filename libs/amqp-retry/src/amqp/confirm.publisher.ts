import type { ConfirmChannel, Message, Options } from 'amqplib';
import { errorMessage } from '../core/error-message.js';
import { PublishError } from '../errors/publish.error.js';
import type { AmqpConnection } from './amqp-connection.js';
import { findReturnedPublish, type PendingPublish } from './returned-publish.js';

interface OpenChannel {
  channel: ConfirmChannel;
  /** Mandatory publishes awaiting their confirm, in publish order (a Set iterates in insertion order). */
  pending: Set<PendingPublish>;
  /** Why the broker closed the channel (e.g. "NOT_FOUND - no exchange 'x'"), once it has. */
  closedBecause?: string;
  closedWithCode?: number;
}

/** How publishes behave while the connection is down. */
export interface PublishLimits {
  /** How long a publish waits for the connection before it rejects. */
  timeoutMs: number;
  /** How many publishes may wait at once; more reject at once. Never an unbounded queue in memory. */
  bufferSize: number;
}

/**
 * Publishes on a confirm channel; each publish settles when the broker has taken responsibility for the message.
 * The broker closes a channel on some publish errors (a missing exchange is a 404), and a lost connection closes
 * them all: the next publish then opens a new one, waiting for the connection within the limits.
 */
export class ConfirmPublisher {
  private current?: Promise<OpenChannel>;
  private waiting = 0;

  constructor(
    private readonly connection: AmqpConnection,
    private readonly limits: PublishLimits,
  ) {}

  /**
   * Resolves once the broker confirmed the message; rejects with PublishError when it nacked it, the channel closed
   * first, or (with `mandatory`, the default) no queue took it.
   */
  async publish(exchange: string, routingKey: string, content: Buffer, options: Options.Publish = {}): Promise<void> {
    const fail = (reason: string, code?: number) => new PublishError(exchange, routingKey, reason, code);
    const open = await this.ready().catch((error: unknown) => {
      throw fail(errorMessage(error));
    });
    const mandatory = options.mandatory ?? true;
    const pending: PendingPublish = { exchange, routingKey, messageId: options.messageId, content, returned: false };
    if (mandatory) open.pending.add(pending);
    return new Promise<void>((resolve, reject) => {
      const settle = (error: unknown) => {
        open.pending.delete(pending);
        if (error) return reject(fail(`the broker did not confirm it (${open.closedBecause ?? errorMessage(error)})`, open.closedWithCode));
        if (pending.returned) return reject(fail('no queue is bound to receive it (returned as unroutable)'));
        resolve();
      };
      try {
        open.channel.publish(exchange, routingKey, content, { ...options, mandatory }, settle);
      } catch (error) {
        open.pending.delete(pending);
        reject(fail(errorMessage(error)));
      }
    });
  }

  async close(): Promise<void> {
    const current = this.current;
    this.current = undefined;
    const open = await current?.catch(() => undefined);
    await open?.channel.close().catch(() => undefined); // already closed with the connection
  }

  /** The channel, once the connection is up: each publish that has to wait for it takes a place in the buffer. */
  private async ready(): Promise<OpenChannel> {
    if (!this.connection.isConnected) {
      if (this.waiting >= this.limits.bufferSize) {
        throw new Error(`the connection is down and ${this.waiting} publishes already wait for it (publishBufferSize)`);
      }
      this.waiting++;
      try {
        await this.connection.whenConnected(this.limits.timeoutMs);
      } finally {
        this.waiting--;
      }
    }
    return this.channel();
  }

  private channel(): Promise<OpenChannel> {
    if (this.current) return this.current;
    const opening = this.connection.createConfirmChannel().then((channel) => {
      const open: OpenChannel = { channel, pending: new Set() };
      channel.on('return', (message: Message) => {
        const publish = findReturnedPublish(open.pending, message);
        if (publish) publish.returned = true;
      });
      channel.on('error', (error: Error & { code?: unknown }) => {
        open.closedBecause = error.message.replace(/^.*?with message "(.*)"$/, '$1');
        if (typeof error.code === 'number') open.closedWithCode = error.code;
      });
      channel.on('close', () => {
        if (this.current === opening) this.current = undefined;
      });
      return open;
    });
    this.current = opening;
    opening.catch(() => {
      if (this.current === opening) this.current = undefined;
    });
    return opening;
  }
}
