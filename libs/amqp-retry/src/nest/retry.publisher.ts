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
  /** The AMQP `correlationId` property, e.g. the request or the business transaction this message belongs to. */
  correlationId?: string;
  /** The AMQP `replyTo` property: where a consumer should answer, when it answers. */
  replyTo?: string;
  /** The AMQP `type` property: the message's type name, e.g. 'order.created.v2'. */
  type?: string;
  /** The AMQP `appId` property: the application that published it. */
  appId?: string;
  /** The AMQP `timestamp` property: a Date, or seconds since the epoch. */
  timestamp?: Date | number;
}

/** What `RetryPublisher.publish` sent, once the broker confirmed it: to log, store or correlate. */
export interface PublishedMessage {
  /** The message id it was sent with: the one given, or the UUID the publisher made. */
  messageId: string;
  /** The exchange it was published to ('' for the default exchange). */
  exchange: string;
  /** The routing key it was published with. */
  routingKey: string;
  /** How long it waits in the delay ladder, in ms; 0 when it was published at once. */
  delayMs: number;
  /** The AMQP properties it was published with (a delayed message is delivered with these when due). */
  properties: Readonly<Options.Publish>;
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
   * Resolves with what it sent (PublishedMessage: the message id among others), typed `void & PublishedMessage` so that
   * code written when it resolved nothing (`(): Promise<void> => publisher.publish(...)`) compiles as before.
   * @example const { messageId } = await publisher.publish('orders', 'order.created', { id: 42 });
   * @example await publisher.publish('orders', 'order.cancel-if-unpaid', { id: 42 }, { delay: '30m' });
   */
  publish(exchange: string, routingKey: string, payload: unknown, options: PublishOptions = {}): Promise<void & PublishedMessage> {
    // Not async, so that a publish waiting for its confirm holds no wrapper promise of ours; whatever is thrown here
    // (a bad delay, a payload with no JSON form) still comes as a rejection, with nothing published.
    try {
      const delayMs = options.delay === undefined ? 0 : readPublishDelay(options.delay);
      const json: string | undefined = JSON.stringify(payload);
      if (json === undefined)
        throw new TypeError(
          `RetryPublisher.publish: a payload of type ${typeof payload} has no JSON form; publish an object, array, string, number, boolean or null`,
        );
      const messageId = options.messageId ?? newMessageId();
      const properties: Options.Publish = {
        mandatory: true, // said here, so that the confirm publisher need not copy the properties to say it
        contentType: 'application/json',
        persistent: options.persistent ?? true,
        messageId,
        headers: options.headers,
      };
      // Set only when given (amqplib would send an absent one as none anyway): no spread of a literal per publish.
      if (options.expiration !== undefined) properties.expiration = options.expiration;
      if (options.priority !== undefined) properties.priority = options.priority; // checked with the others (checkPublishProperties)
      if (options.correlationId !== undefined) properties.correlationId = options.correlationId;
      if (options.replyTo !== undefined) properties.replyTo = options.replyTo;
      if (options.type !== undefined) properties.type = options.type;
      if (options.appId !== undefined) properties.appId = options.appId;
      if (options.timestamp !== undefined) properties.timestamp = secondsOf(options.timestamp);
      const receipt: PublishedMessage = { messageId, exchange, routingKey, delayMs, properties };
      const sent = this.engine.publish(exchange, routingKey, Buffer.from(json), properties, delayMs);
      // Only where a handler queue refuses publishes once full is a nack worth explaining.
      const explained = this.engine.hasQueuesThatRefuse
        ? sent.catch((error: unknown) => Promise.reject(this.engine.explainRefusal(error, exchange, routingKey)))
        : sent;
      return explained.then(() => receipt as void & PublishedMessage);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

/** A timestamp as AMQP carries it: whole seconds since the epoch (a Date that is no date is a TypeError, as a bad number is). */
const secondsOf = (timestamp: Date | number): number => (timestamp instanceof Date ? Math.floor(timestamp.getTime() / 1000) : timestamp);
