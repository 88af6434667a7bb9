import { Injectable } from '@nestjs/common';
import type { Options } from 'amqplib';
import { readPublishDelay } from '../core/delivery/delay.plan.js';
import type { Duration } from '../core/time/duration.reader.js';
import { RetryEngine } from '../engine/retry.engine.js';
import { newMessageId } from '../core/message/message-id.factory.js';

/** Options of RetryPublisher.publish. */
export interface PublishOptions {
  /**
   * Deliver after this long instead of now: milliseconds or a duration ('90s', '30m', '3d'), from 0 to about 49.7
   * days. 0 or absent publishes at once. Never early; see docs/delays.md for the lateness measured.
   */
  delay?: Duration;
  /** Headers of the message, besides those the library sets. */
  headers?: Record<string, unknown>;
  /** Default: a random UUID. */
  messageId?: string;
  /** Default: true. A delayed message waits persistent in the ladder whatever this says, and is delivered with it. */
  persistent?: boolean;
  /**
   * A per-message TTL in milliseconds (the AMQP `expiration` property): the broker drops (or dead-letters) the message
   * if it waits longer in its queue. For a delayed message it runs from delivery, after the delay, never during it.
   * A whole number from 0 to 2^32 - 1 (a number or a string of digits); anything else is a RangeError.
   */
  expiration?: number | string;
  /**
   * The message's priority (the AMQP `priority` property), a whole number from 0 to 255: in a handler queue declared
   * with `maxPriority`, higher priorities are delivered first. Anything else is a RangeError.
   */
  priority?: number;
}

/** Publishes JSON messages on a confirm channel of the module's publishing connection, now or after a delay. */
@Injectable()
export class RetryPublisher {
  constructor(private readonly engine: RetryEngine) {}

  /**
   * Publishes `payload` as JSON and resolves once the broker has confirmed it. Rejects with PublishError when the
   * broker refused it, no queue was bound to receive it, or no confirm came within `confirmTimeout`; with a RangeError
   * (nothing published) for an invalid delay; with NotConnectedError after the application has shut down. A delayed
   * message is confirmed when it enters the delay ladder; when it is due, it is published to `exchange` with
   * `routingKey` as if published then (headers x-delay-* added), and parked if no queue takes it.
   * @example await publisher.publish('orders', 'order.created', { id: 42 });
   * @example await publisher.publish('orders', 'order.cancel-if-unpaid', { id: 42 }, { delay: '30m' });
   */
  publish(exchange: string, routingKey: string, payload: unknown, options: PublishOptions = {}): Promise<void> {
    // Not async, so that a publish waiting for its confirm holds no wrapper promise of ours; whatever is thrown here
    // (a bad delay, a payload with no JSON form) still comes as a rejection, with nothing published.
    try {
      const delayMs = options.delay === undefined ? 0 : readPublishDelay(options.delay);
      const json: string | undefined = JSON.stringify(payload);
      if (json === undefined)
        throw new TypeError(
          `RetryPublisher.publish: a payload of type ${typeof payload} has no JSON form; publish an object, array, string, number, boolean or null`,
        );
      const properties: Options.Publish = {
        mandatory: true, // said here, so that the confirm publisher need not copy the properties to say it
        contentType: 'application/json',
        persistent: options.persistent ?? true,
        messageId: options.messageId ?? newMessageId(),
        headers: options.headers,
      };
      // Set only when given (amqplib would send an absent one as none anyway): no spread of a literal per publish.
      if (options.expiration !== undefined) properties.expiration = options.expiration;
      if (options.priority !== undefined) properties.priority = options.priority; // checked with the others (checkPublishProperties)
      const sent = this.engine.publish(exchange, routingKey, Buffer.from(json), properties, delayMs);
      // Only where a handler queue refuses publishes once full is a nack worth explaining (a wrapper per publish).
      if (!this.engine.hasQueuesThatRefuse) return sent;
      return sent.catch((error: unknown) => Promise.reject(this.engine.explainRefusal(error, exchange, routingKey)));
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
