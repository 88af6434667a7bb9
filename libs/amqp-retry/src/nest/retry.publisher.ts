import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Duration } from '../core/duration.js';
import { parseDuration } from '../core/duration.js';
import { RetryConnectionHost } from './retry-connection.host.js';

/** Options of RetryPublisher.publish. */
export interface PublishOptions {
  /** Deliver after this long instead of now (0 or absent: now). */
  delay?: Duration;
  headers?: Record<string, unknown>;
  /** Default: a random UUID. */
  messageId?: string;
  /** Default: true. */
  persistent?: boolean;
}

/** Publishes JSON messages on a confirm channel of the module's connection. */
@Injectable()
export class RetryPublisher {
  constructor(private readonly host: RetryConnectionHost) {}

  /**
   * Publishes `payload` as JSON and resolves once the broker has confirmed it. Rejects with PublishError when the
   * broker refused it or no queue was bound to receive it.
   * @example await publisher.publish('orders', 'order.created', { id: 42 });
   */
  async publish(exchange: string, routingKey: string, payload: unknown, options: PublishOptions = {}): Promise<void> {
    const delayMs = options.delay === undefined ? 0 : parseDuration(options.delay);
    if (delayMs !== 0) throw new Error('RetryPublisher.publish: delayed delivery is not available yet; publish without delay');
    const publisher = await this.host.publisher();
    await publisher.publish(exchange, routingKey, Buffer.from(JSON.stringify(payload)), {
      contentType: 'application/json',
      persistent: options.persistent ?? true,
      messageId: options.messageId ?? randomUUID(),
      headers: options.headers,
    });
  }
}
