import type { ConsumeMessage } from 'amqplib';
import { forwardedExpiration, readDelayTarget, withoutDelayDeaths, type DelayTarget, type DelayTopology } from '../core/delay.plan.js';
import type { ParkReason } from '../core/delivery.decision.js';
import { errorMessage } from '../core/error-message.js';
import { republishProperties } from '../core/message-properties.js';
import { reconnectDelay } from '../core/reconnect.policy.js';
import type { RetryLogger } from '../core/retry-logger.js';
import type { ObserverHub } from '../observability/observer-hub.js';
import type { PublishScope } from '../observability/retry-observer.js';
import type { ConfirmPublisher } from './confirm.publisher.js';
import { isMissingTarget, PARK_RETRY, pause, type MessageParker, type ParkTarget } from './message.parker.js';
import type { Settle } from './queue.consumer.js';

/**
 * The last step of a delayed delivery: a due message from the ladder's ready queue is published to the exchange and
 * routing key its headers name, as if published now (every exchange type routes it as it would have then), and
 * acked once the broker confirmed the copy. The ladder's dead-letter history is dropped from the copy, and the
 * message's own `expiration`, carried through the ladder in a header, is its property again: it runs from delivery.
 *
 * The copy is mandatory, as an immediate publish is: a message without target headers, whose target exchange no
 * longer exists, or that no queue takes, is parked in the ladder's error queue (`undeliverable`), never dropped. Any
 * other failure is tried again with backoff while the message stays unsettled (at least once, never lost).
 */
export class DelayForwardHandler {
  constructor(
    private readonly ladder: DelayTopology,
    private readonly publisher: ConfirmPublisher,
    private readonly parker: MessageParker,
    private readonly park: ParkTarget,
    private readonly logger: RetryLogger,
    private readonly observers?: ObserverHub,
  ) {}

  readonly handle = async (message: ConsumeMessage, settle: Settle, signal: AbortSignal): Promise<void> => {
    const headers = message.properties.headers ?? {};
    const target = readDelayTarget(headers);
    if (!target) {
      const error = new Error('a delayed message without x-delay-target-exchange/-routing-key headers');
      return this.parkIt(message, settle, 'malformed', error, signal);
    }
    // The message's own expiration waited in a header (the ladder would have counted it): it applies from now on.
    const { headers: kept, expiration } = forwardedExpiration(withoutDelayDeaths(headers, this.ladder.prefix));
    const copy = { ...republishProperties(message.properties, kept), ...(expiration !== undefined && { expiration }), mandatory: true };
    const observers = this.observers?.active ? this.observers : undefined;
    let scope: PublishScope | undefined;
    if (observers) {
      copy.headers ??= {};
      scope = observers.publishing({ ...target, kind: 'forward', headers: copy.headers, messageId: message.properties.messageId });
    }
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        await this.publisher.publish(target.exchange, target.routingKey, message.content, copy, {
          signal,
          onSlowConfirm: (waitedMs) =>
            this.logger.warn(`A due delayed message for "${target.exchange}" waits ${waitedMs} ms for the broker's confirm`),
        });
        scope?.end?.();
        observers?.emit('forwarded', target);
        return settle.ack();
      } catch (error) {
        scope?.end?.(error);
        scope = undefined; // ended with the first failure; the tries after it are not spans of their own
        observers?.emit('publishRejected', { ...target, kind: 'forward', error });
        if (isMissingTarget(error)) return this.parkIt(message, settle, 'undeliverable', error, signal, target);
        const delay = reconnectDelay(attempt, PARK_RETRY);
        this.logger.error(`Could not forward a delayed message to "${target.exchange}" (${errorMessage(error)}); trying again in ${delay} ms`);
        await pause(delay, signal);
      }
    }
  };

  private parkIt(message: ConsumeMessage, settle: Settle, reason: ParkReason, error: unknown, signal: AbortSignal, target?: DelayTarget) {
    return this.parker.park(
      message,
      settle,
      this.park,
      {
        reason,
        error,
        handlerCalls: 0,
        queue: this.ladder.readyQueue,
        deaths: [],
        ...(target && { deliveredExchange: target.exchange, deliveredRoutingKey: target.routingKey }),
      },
      signal,
    );
  }
}
