import type { ConsumeMessage, Options } from 'amqplib';
import {
  configuredDelayPrefix,
  earlyByMs,
  forwardedProperties,
  isLadderTarget,
  ladderTargetProblem,
  readDelayTarget,
  type DelayTarget,
  type DelayTopology,
} from '../core/delivery/delay.plan.js';
import type { ParkReason } from '../core/delivery/delivery.decision.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { reconnectDelay } from '../core/connection/reconnect.policy.js';
import { planGiveBack, RefusedTargets, type GiveBack } from '../core/delivery/refused-target.policy.js';
import { PublishError } from '../errors/publish.error.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';
import type { ObserverHub } from '../core/observe/observer.hub.js';
import type { PublishScope } from '../core/observe/retry.observer.js';
import type { ConfirmPublisher } from '../amqp/confirm.publisher.js';
import { REPUBLISH_RETRY, type MessageParker, type ParkTarget } from './park-route.steps.js';
import { isMissingTarget, isUnsendable } from '../core/publish/publish.outcome.js';
import { replyTargetProblem } from '../core/publish/reply-address.rules.js';
import { sleep } from '../core/time/duration.timer.js';
import type { Settle } from '../amqp/queue.consumer.js';

/**
 * The last step of a delayed delivery: a due message from the ladder's ready queue is published (mandatory) to the
 * exchange and routing key its headers name, as if published now, and acked once confirmed. A message without a
 * target, whose target is the ladder itself, that no queue takes, or that can never be published as it is (a name
 * amqplib cannot encode, an internal exchange), is parked in the ladder's error queue.
 *
 * A target that refuses the message (a 403 this user may not publish, a full queue that rejects publishes) must not
 * hold the forwarder's places, or every other application's due messages would wait behind it: the message is given
 * back to the ladder, due again 1 s later, waiting longer each time (giveBackDelay), for this forwarder or another one
 * sharing the ladder that may deliver it, and acked once that publish is confirmed; for a while after a 403 the
 * next ones for that exchange are given back without a try (RefusedTargets). Only when the give-back fails too is it
 * tried again in place; one whose x-death the ladder must not carry is parked.
 */
export class DelayForwardHandler {
  constructor(
    private readonly ladder: DelayTopology,
    private readonly publisher: ConfirmPublisher,
    private readonly parker: MessageParker,
    private readonly park: ParkTarget,
    private readonly logger: RetryLogger,
    private readonly observers?: ObserverHub,
    /** The prefix of the ladder refused messages are given back to: this one's, or the current one for an old ladder's drain. */
    private readonly into: string = ladder.prefix,
  ) {}

  private readonly refused = new RefusedTargets();

  readonly handle = async (message: ConsumeMessage, settle: Settle, signal: AbortSignal): Promise<void> => {
    const headers = message.properties.headers ?? {};
    const target = readDelayTarget(headers);
    if (!target) {
      const error = new Error('a delayed message without x-delay-target-exchange/-routing-key headers');
      return this.parkIt(message, settle, 'malformed', error, signal);
    }
    // Both ladders of the configured prefix: a quorum ladder's forwarder delivering to the classic one's names loops too.
    const configured = configuredDelayPrefix(this.ladder);
    if (isLadderTarget(target, configured)) {
      // Published by hand, or by another client: delivering it would put it back in the ready queue, for ever.
      return this.parkIt(message, settle, 'malformed', new Error(ladderTargetProblem(target, configured)), signal, target);
    }
    // Put in the ladder by hand or by another client: the broker would close the forwarder's connection over it, again and again.
    const replyTarget = replyTargetProblem(target.exchange, target.routingKey, true);
    if (replyTarget !== undefined) return this.parkIt(message, settle, 'malformed', new Error(replyTarget), signal, target);
    // The message's own expiration waited in a header (the ladder would have counted it): it applies from now on. So do
    // its CC and BCC, routed by this publish as they would have been by an immediate one.
    const copy = forwardedProperties(message.properties, this.ladder.prefix);
    // Never early: a broker clock that runs fast expires the ladder's TTLs before the due time.
    // A timer may fire a millisecond before the wall clock reads its end: the clock is read again after each wait.
    const arrived = Date.now();
    const holdUntil = arrived + earlyByMs(headers, arrived);
    for (let left = holdUntil - Date.now(); left > 0; left = holdUntil - Date.now()) {
      await sleep(left, { signal });
      if (signal.aborted) return; // the delivery is gone: the broker delivers it again
    }
    if (this.refused.isHeld(target.exchange, Date.now())) {
      const back = await this.giveBack(target, message.content, copy, signal, true);
      if (back === true) return settle.ack();
      if (back) return this.parkIt(message, settle, 'malformed', back, signal, target);
    }
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
        if (signal.aborted) return; // the delivery is gone: the broker delivers it again
        scope = undefined; // ended with the first failure; the tries after it are not spans of their own
        observers?.emit('publishRejected', { ...target, kind: 'forward', error });
        if (isMissingTarget(error)) return this.parkIt(message, settle, 'undeliverable', error, signal, target);
        // A name amqplib cannot encode, an internal exchange: no forwarder will ever deliver it, given back it would loop.
        if (isUnsendable(error)) return this.parkIt(message, settle, 'malformed', error, signal, target);
        const forbidden = error instanceof PublishError && error.brokerCode === 403;
        if (forbidden) this.refused.refused(target.exchange, Date.now());
        const back = await this.giveBack(target, message.content, copy, signal, forbidden, error);
        if (back === true) return settle.ack();
        if (back) return this.parkIt(message, settle, 'malformed', back, signal, target);
        const delay = reconnectDelay(attempt, REPUBLISH_RETRY);
        this.logger.error(`Could not forward a delayed message to "${target.exchange}" (${errorMessage(error)}); trying again in ${delay} ms`);
        await sleep(delay, { signal });
      }
    }
  };

  /**
   * Gives a due message its target refused back to the ladder, due again a while later (planGiveBack), for this or
   * another forwarder: its place here is free at once, and nothing is lost. `forbidden`: refused with a 403; no
   * `error`: not tried, the exchange is held. True once given back; false when that publish failed; the reason when the
   * message may not go through the ladder (its x-death), to park it with.
   */
  private async giveBack(
    target: DelayTarget,
    content: Buffer,
    forwarded: Options.Publish,
    signal: AbortSignal,
    forbidden: boolean,
    error?: unknown,
  ): Promise<boolean | Error> {
    let back: GiveBack;
    try {
      back = planGiveBack(forwarded, target, Date.now(), this.into, forbidden);
    } catch (malformed) {
      return malformed instanceof Error ? malformed : new Error(String(malformed));
    }
    try {
      await this.publisher.publish(back.exchange, back.routingKey, content, back.properties, {
        signal,
        onSlowConfirm: (waitedMs) =>
          this.logger.warn(`A due delayed message given back to the delay ladder waits ${waitedMs} ms for the broker's confirm`),
      });
    } catch (giveBackError) {
      if (!signal.aborted)
        this.logger.error(`Could not give a due delayed message for "${target.exchange}" back to the delay ladder: ${errorMessage(giveBackError)}`);
      return false;
    }
    const { log } = this.refused.giveBack(target.exchange, Date.now());
    if (log === undefined) return true;
    const again = `${log} due delayed message(s) for it given back to "${this.ladder.readyQueue}" through the delay ladder (the last due again in ${back.delayMs} ms; nothing is lost, they wait until it is delivered)`;
    if (!forbidden) {
      this.logger.error(`Exchange "${target.exchange}" refused a due delayed message (${errorMessage(error)}): ${again}`);
    } else {
      this.logger.error(
        `This application may not publish to exchange "${target.exchange}"${error ? ` (${errorMessage(error)})` : ' (403 ACCESS_REFUSED)'}: ${again}, ` +
          `for an application that shares this delay ladder and may deliver them. Give each application a ladder of its own ` +
          `(RetryModule option delayedDelivery: { prefix: '<application>.delay' }), or let this user write to "${target.exchange}"`,
      );
    }
    return true;
  }

  private parkIt(message: ConsumeMessage, settle: Settle, reason: ParkReason, error: unknown, signal: AbortSignal, target?: DelayTarget) {
    const delivered = target && { deliveredExchange: target.exchange, deliveredRoutingKey: target.routingKey };
    const details = { reason, error, handlerCalls: 0, queue: this.ladder.readyQueue, deaths: [], ...delivered };
    return this.parker.park(message, settle, this.park, details, signal);
  }
}
