import type { ConsumeMessage } from 'amqplib';
import {
  forwardedExpiration,
  isLadderTarget,
  ladderTargetProblem,
  readDelayTarget,
  withoutDelayDeaths,
  type DelayTarget,
  type DelayTopology,
} from '../core/delivery/delay.plan.js';
import type { ParkReason } from '../core/delivery/delivery.decision.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { republishProperties } from '../core/message/message.properties.js';
import { reconnectDelay } from '../core/connection/reconnect.policy.js';
import { RefusedTargets } from '../core/delivery/refused-target.policy.js';
import { PublishError } from '../errors/publish.error.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { PublishScope } from '../core/observe/retry.observer.js';
import type { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import { REPUBLISH_RETRY, type MessageParker, type ParkTarget } from './park-route.steps.js';
import { isMissingTarget } from '../core/publish/publish.outcome.js';
import { sleep } from '../core/time/duration.timer.js';
import type { Settle } from '../amqp/queue.consumer.js';

/**
 * The last step of a delayed delivery: a due message from the ladder's ready queue is published (mandatory) to the
 * exchange and routing key its headers name, as if published now, and acked once confirmed. A message without a
 * target, whose target is the ladder itself, or that no queue takes, is parked in the ladder's error queue; any other failure is tried again with backoff.
 *
 * A ladder shared by several applications carries each one's messages to every forwarder: a publish this user may not
 * make (403) is not retried in place, which would keep the message from the application that may deliver it; it is
 * held a while and given back to the ready queue, where any forwarder may take it.
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

  private readonly refused = new RefusedTargets();

  readonly handle = async (message: ConsumeMessage, settle: Settle, signal: AbortSignal): Promise<void> => {
    const headers = message.properties.headers ?? {};
    const target = readDelayTarget(headers);
    if (!target) {
      const error = new Error('a delayed message without x-delay-target-exchange/-routing-key headers');
      return this.parkIt(message, settle, 'malformed', error, signal);
    }
    if (isLadderTarget(target, this.ladder.prefix)) {
      // Published by hand, or by another client: delivering it would put it back in the ready queue, for ever.
      return this.parkIt(message, settle, 'malformed', new Error(ladderTargetProblem(target, this.ladder.prefix)), signal, target);
    }
    // The message's own expiration waited in a header (the ladder would have counted it): it applies from now on.
    const { headers: kept, expiration } = forwardedExpiration(withoutDelayDeaths(headers, this.ladder.prefix));
    const copy = republishProperties(message.properties, kept); // a new object: set here rather than spread (docs/performance.md)
    if (expiration !== undefined) copy.expiration = expiration;
    copy.mandatory = true;
    if (this.refused.isHeld(target.exchange, Date.now())) return this.giveBack(target, settle, signal);
    const observers = this.observers?.active ? this.observers : undefined;
    let scope: PublishScope | undefined;
    if (observers) {
      copy.headers ??= {};
      const { exchange, routingKey } = target;
      scope = observers.publishing({ exchange, routingKey, kind: 'forward', headers: copy.headers, messageId: message.properties.messageId });
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
        this.refused.delivered(target.exchange);
        return settle.ack();
      } catch (error) {
        scope?.end?.(error);
        scope = undefined; // ended with the first failure; the tries after it are not spans of their own
        observers?.emit('publishRejected', { ...target, kind: 'forward', error });
        if (isMissingTarget(error)) return this.parkIt(message, settle, 'undeliverable', error, signal, target);
        if (error instanceof PublishError && error.brokerCode === 403) {
          this.refused.refused(target.exchange, Date.now());
          return this.giveBack(target, settle, signal, error);
        }
        const delay = reconnectDelay(attempt, REPUBLISH_RETRY);
        this.logger.error(`Could not forward a delayed message to "${target.exchange}" (${errorMessage(error)}); trying again in ${delay} ms`);
        await sleep(delay, { signal });
      }
    }
  };

  /** Holds the message, then puts it back in the ready queue for a forwarder that may deliver it (nothing lost). */
  private async giveBack(target: DelayTarget, settle: Settle, signal: AbortSignal, error?: unknown): Promise<void> {
    const { holdMs, log } = this.refused.giveBack(target.exchange, Date.now());
    if (log !== undefined) {
      this.logger.error(
        `This application may not publish to exchange "${target.exchange}"${error ? ` (${errorMessage(error)})` : ' (403 ACCESS_REFUSED)'}: ` +
          `${log} due delayed message(s) for it given back to "${this.ladder.readyQueue}" after ${holdMs} ms, for an application that shares ` +
          `this delay ladder and may deliver them (nothing is lost; they wait until one does). Give each application a ladder of its own ` +
          `(RetryModule option delayedDelivery: { prefix: '<application>.delay' }), or let this user write to "${target.exchange}"`,
      );
    }
    await sleep(holdMs, { signal });
    if (!signal.aborted) settle.nack(true); // else the channel is gone and the broker gives it back itself
  }

  private parkIt(message: ConsumeMessage, settle: Settle, reason: ParkReason, error: unknown, signal: AbortSignal, target?: DelayTarget) {
    const delivered = target && { deliveredExchange: target.exchange, deliveredRoutingKey: target.routingKey };
    const details = { reason, error, handlerCalls: 0, queue: this.ladder.readyQueue, deaths: [], ...delivered };
    return this.parker.park(message, settle, this.park, details, signal);
  }
}
