import type { Logger } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { decideAfterFailure, decideBeforeHandling, type ParkReason } from '../core/delivery.decision.js';
import { formatDuration } from '../core/duration.js';
import type { HandlerConfig } from '../core/handler-config.js';
import { parkedPublishOptions } from '../core/parked-message.js';
import type { RetryContext } from '../core/retry-context.js';
import { parseXDeath, rejectedCount, type XDeath } from '../core/x-death.parser.js';
import type { ConfirmPublisher } from './confirm.publisher.js';
import type { Settle } from './queue.consumer.js';

/** Calls the user's handler (through Nest's context: interceptors, filters). */
export type HandlerInvoker = (payload: unknown, context: RetryContext) => Promise<unknown>;

/** How long a message whose parking failed stays unacknowledged before it is requeued, so it cannot spin. */
export const PARK_FAILURE_PAUSE_MS = 1_000;

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * What a handler queue does with each delivery. Success acks; a retryable failure nacks without requeue, so the
 * broker moves the message through the tiers; anything else is parked (published to the error queue and
 * confirmed) and only then acked.
 */
export class RetryDeliveryHandler {
  constructor(
    private readonly config: HandlerConfig,
    private readonly invoke: HandlerInvoker,
    private readonly parker: ConfirmPublisher,
    private readonly logger: Logger,
  ) {}

  readonly handle = async (message: ConsumeMessage, settle: Settle): Promise<void> => {
    const { queue, maxAttempts, delaysMs } = this.config;
    const deaths = parseXDeath(message.properties.headers?.['x-death']);
    const attempt = 1 + rejectedCount(deaths, queue);
    const before = decideBeforeHandling(message.content, attempt, maxAttempts);
    if (before.action === 'park') return this.park(message, settle, deaths, before.reason, before.error, before.handlerCalls);

    const context: RetryContext = { attempt, maxAttempts, isLastAttempt: attempt >= maxAttempts, queue, message, deaths };
    try {
      await this.invoke(before.payload, context);
    } catch (error) {
      const after = decideAfterFailure(attempt, maxAttempts, this.config.isRetryable(error), delaysMs.length);
      if (after.action === 'park') return this.park(message, settle, deaths, after.reason, error, attempt);
      this.logger.debug(
        `"${queue}" attempt ${attempt}/${maxAttempts} failed: ${describe(error)}; retrying in ${formatDuration(delaysMs[after.tier - 1])}`,
      );
      return settle.nack(false);
    }
    settle.ack();
  };

  private async park(message: ConsumeMessage, settle: Settle, deaths: XDeath[], reason: ParkReason, error: unknown, handlerCalls: number) {
    const { queue, errorQueue } = this.config;
    const options = parkedPublishOptions({
      reason,
      error,
      handlerCalls,
      queue,
      deaths,
      deliveredExchange: message.fields.exchange,
      deliveredRoutingKey: message.fields.routingKey,
      properties: message.properties,
      now: new Date(),
    });
    try {
      await this.parker.publish('', errorQueue, message.content, options);
    } catch (publishError) {
      this.logger.error(`Could not park a message from "${queue}" in "${errorQueue}" (${describe(publishError)}); it goes back to the queue`);
      await new Promise((resolve) => setTimeout(resolve, PARK_FAILURE_PAUSE_MS));
      return settle.nack(true);
    }
    settle.ack();
    this.logger.warn(`Parked a message from "${queue}" in "${errorQueue}" (${reason} after ${handlerCalls} attempts): ${describe(error)}`);
  }
}
