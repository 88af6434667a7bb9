import { randomUUID } from 'node:crypto';
import type { ConfirmChannel, Message, Options } from 'amqplib';
import { PublishError } from '../errors/publish.error.js';

/**
 * Marks each mandatory publish, so that a message the broker returns as unroutable can be matched to its publish.
 * The broker sends basic.return before the basic.ack of the same message, so the mark is seen first.
 */
export const PUBLISH_ID_HEADER = 'x-amqp-retry-publish-id';

interface OpenChannel {
  channel: ConfirmChannel;
  returned: Set<string>;
  /** Why the broker closed the channel (e.g. "NOT_FOUND - no exchange 'x'"), once it has. */
  closedBecause?: string;
}

/**
 * Publishes on a confirm channel; each publish settles when the broker has taken responsibility for the message.
 * The broker closes a channel on some publish errors (a missing exchange is a 404): the next publish then opens a
 * new one, so one bad publish never stops the ones after it.
 */
export class ConfirmPublisher {
  private current?: Promise<OpenChannel>;

  constructor(private readonly openChannel: () => Promise<ConfirmChannel>) {}

  /**
   * Resolves once the broker confirmed the message; rejects with PublishError when it nacked it, the channel closed
   * first, or (with `mandatory`, the default) no queue took it.
   */
  async publish(exchange: string, routingKey: string, content: Buffer, options: Options.Publish = {}): Promise<void> {
    const open = await this.channel();
    const mandatory = options.mandatory ?? true;
    const id = randomUUID();
    const headers = mandatory ? { ...options.headers, [PUBLISH_ID_HEADER]: id } : options.headers;
    const fail = (reason: string) => new PublishError(exchange, routingKey, reason);
    return new Promise<void>((resolve, reject) => {
      const settle = (error: unknown) => {
        if (error) return reject(fail(`the broker did not confirm it (${open.closedBecause ?? errorText(error)})`));
        if (open.returned.delete(id)) return reject(fail('no queue is bound to receive it (returned as unroutable)'));
        resolve();
      };
      try {
        open.channel.publish(exchange, routingKey, content, { ...options, mandatory, headers }, settle);
      } catch (error) {
        reject(fail(errorText(error)));
      }
    });
  }

  async close(): Promise<void> {
    const current = this.current;
    this.current = undefined;
    const open = await current?.catch(() => undefined);
    await open?.channel.close().catch(() => undefined); // already closed with the connection
  }

  private channel(): Promise<OpenChannel> {
    if (this.current) return this.current;
    const opening = this.openChannel().then((channel) => {
      const open: OpenChannel = { channel, returned: new Set() };
      channel.on('return', (message: Message) => {
        const id = message.properties.headers?.[PUBLISH_ID_HEADER];
        if (typeof id === 'string') open.returned.add(id);
      });
      channel.on('error', (error: Error) => (open.closedBecause = error.message.replace(/^.*?with message "(.*)"$/, '$1')));
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

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
