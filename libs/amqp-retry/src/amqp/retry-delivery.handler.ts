import type { Logger } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { decideAfterFailure, decideBeforeHandling } from '../core/delivery.decision.js';
import { formatDuration } from '../core/duration.js';
import type { HandlerConfig } from '../core/handler-config.js';
import type { RetryContext } from '../core/retry-context.js';
import { parseXDeath, rejectedCount, unsettledDeliveries } from '../core/x-death.parser.js';
import { errorMessage } from '../core/error-message.js';
import type { MessageParker } from './message.parker.js';
import type { Settle } from './queue.consumer.js';

/** Calls the user's handler (through Nest's context: interceptors, filters). */
export type HandlerInvoker = (payload: unknown, context: RetryContext) => Promise<unknown>;

/**
 * What a handler queue does with each delivery. Success acks; a retryable failure nacks without requeue, so the
 * broker moves the message through the tiers; anything else is parked (published to the error queue and
 * confirmed) and only then acked.
 */
export class RetryDeliveryHandler {
  constructor(
    private readonly config: HandlerConfig,
    private readonly invoke: HandlerInvoker,
    private readonly parker: MessageParker,
    private readonly logger: Logger,
  ) {}

  readonly handle = async (message: ConsumeMessage, settle: Settle): Promise<void> => {
    const { queue, maxAttempts, delaysMs, errorQueue } = this.config;
    const deaths = parseXDeath(message.properties.headers?.['x-death']);
    const attempt = 1 + rejectedCount(deaths, queue);
    const before = decideBeforeHandling(message.content, attempt, maxAttempts, unsettledDeliveries(message.properties.headers));
    if (before.action === 'park') {
      return this.parker.park(message, settle, errorQueue, {
        queue,
        deaths,
        reason: before.reason,
        error: before.error,
        handlerCalls: before.handlerCalls,
      });
    }

    const context: RetryContext = { attempt, maxAttempts, isLastAttempt: attempt >= maxAttempts, queue, message, deaths };
    try {
      await this.invoke(before.payload, context);
    } catch (error) {
      const after = decideAfterFailure(attempt, maxAttempts, this.config.isRetryable(error), delaysMs.length);
      if (after.action === 'park')
        return this.parker.park(message, settle, errorQueue, { queue, deaths, reason: after.reason, error, handlerCalls: attempt });
      this.logger.debug(
        `"${queue}" attempt ${attempt}/${maxAttempts} failed: ${errorMessage(error)}; retrying in ${formatDuration(delaysMs[after.tier - 1])}`,
      );
      return settle.nack(false);
    }
    settle.ack();
  };
}
