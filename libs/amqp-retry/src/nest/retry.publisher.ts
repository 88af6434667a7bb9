import { Injectable } from '@nestjs/common';
import { readPublishDelay } from '../core/delivery/delay.plan.js';
import { publishProperties, readPublishOptions, type PublishedMessage, type PublishOptions } from '../core/publish/publish.options.js';
import { RetryEngine } from '../engine/retry.engine.js';

export type { PublishedMessage, PublishOptions };

/** Publishes JSON messages on a confirm channel of the module's publishing connection, now or after a delay. */
@Injectable()
export class RetryPublisher {
  constructor(private readonly engine: RetryEngine) {}

  /**
   * Publishes `payload` as JSON and resolves once the broker has confirmed it. Rejects with PublishError when the
   * broker refused it, no queue was bound to receive it, or no confirm came within `confirmTimeout`; with a TypeError
   * or RangeError (nothing published) for options that are no object, an invalid delay or an invalid property; with NotConnectedError after the application has shut down. A delayed
   * message is confirmed when it enters the delay ladder; when it is due, it is published to `exchange` with
   * `routingKey` as if published then (headers x-delay-* added), and parked if no queue takes it.
   * Resolves with what it sent (PublishedMessage), typed `void & PublishedMessage` so that
   * `(): Promise<void> => publisher.publish(...)` compiles.
   * @example const { messageId } = await publisher.publish('orders', 'order.created', { id: 42 });
   * @example await publisher.publish('orders', 'order.cancel-if-unpaid', { id: 42 }, { delay: '30m' });
   */
  publish(exchange: string, routingKey: string, payload: unknown, options?: PublishOptions): Promise<void & PublishedMessage> {
    // Not async, so that a publish waiting for its confirm holds no wrapper promise of ours; whatever is thrown here
    // (a bad delay, a payload with no JSON form) still comes as a rejection, with nothing published.
    try {
      const given = readPublishOptions(options, 'RetryPublisher.publish');
      const delayMs = given.delay === undefined ? 0 : readPublishDelay(given.delay);
      const json: string | undefined = JSON.stringify(payload);
      if (json === undefined)
        throw new TypeError(
          `RetryPublisher.publish: a payload of type ${typeof payload} has no JSON form; publish an object, array, string, number, boolean or null`,
        );
      // mandatory: said here, so that the confirm publisher need not copy the properties to say it
      const properties = publishProperties(given, { mandatory: true, contentType: 'application/json' });
      const receipt: PublishedMessage = { messageId: properties.messageId, exchange, routingKey, delayMs, properties };
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
