import { randomUUID } from 'node:crypto';
import type { ConfirmChannel, Message, Options } from 'amqplib';
import { PublishError } from '../errors/publish.error.js';

/**
 * Marks each publish, so that a message the broker returns as unroutable can be matched to its publish.
 * The broker sends basic.return before the basic.ack of the same message, so the mark is seen first.
 */
export const PUBLISH_ID_HEADER = 'x-amqp-retry-publish-id';

/** Publishes on a confirm channel; each publish settles when the broker has taken responsibility for the message. */
export class ConfirmPublisher {
  private readonly returned = new Set<string>();

  constructor(private readonly channel: ConfirmChannel) {
    channel.on('return', (message: Message) => {
      const id = message.properties.headers?.[PUBLISH_ID_HEADER];
      if (typeof id === 'string') this.returned.add(id);
    });
  }

  /**
   * Resolves once the broker confirmed the message; rejects with PublishError when it nacked it, the channel closed
   * first, or (with `mandatory`, the default) no queue took it.
   */
  publish(exchange: string, routingKey: string, content: Buffer, options: Options.Publish = {}): Promise<void> {
    const mandatory = options.mandatory ?? true;
    const id = randomUUID();
    const headers = mandatory ? { ...options.headers, [PUBLISH_ID_HEADER]: id } : options.headers;
    return new Promise<void>((resolve, reject) => {
      const settle = (error: unknown) => {
        if (error) return reject(new PublishError(exchange, routingKey, `the broker did not confirm it (${errorText(error)})`));
        if (this.returned.delete(id)) return reject(new PublishError(exchange, routingKey, 'no queue is bound to receive it (returned as unroutable)'));
        resolve();
      };
      try {
        this.channel.publish(exchange, routingKey, content, { ...options, mandatory, headers }, settle);
      } catch (error) {
        reject(new PublishError(exchange, routingKey, errorText(error)));
      }
    });
  }

  async close(): Promise<void> {
    await this.channel.close().catch(() => undefined); // already closed with the connection
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
