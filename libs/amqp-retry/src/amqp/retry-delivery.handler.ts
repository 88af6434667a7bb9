import type { ConsumeMessage } from 'amqplib';
import { decideAfterFailure, decideBeforeHandling } from '../core/delivery.decision.js';
import { formatDuration } from '../core/duration.js';
import { errorMessage } from '../core/error-message.js';
import type { HandlerConfig } from '../core/handler-config.js';
import type { RetryContext } from '../core/retry-context.js';
import type { RetryLogger } from '../core/retry-logger.js';
import { type MessageParker, type ParkTarget, pause, PARK_RETRY } from './message.parker.js';
import type { Settle } from './queue.consumer.js';
import type { TopologyGuard } from './topology.guard.js';
import { reconnectDelay } from '../core/reconnect.policy.js';

/** Calls the user's handler (through Nest's context: interceptors, filters). */
export type HandlerInvoker = (payload: unknown, context: RetryContext) => Promise<unknown>;

/**
 * What a handler queue does with each delivery. Success acks; a retryable failure nacks without requeue, so the
 * broker moves the message through the tiers (once the guard has made sure they exist); anything else is parked
 * (published to the error queue and confirmed) and only then acked. A delivery that cannot be read (body, death
 * history) is parked before the handler or any nack sees it.
 */
export class RetryDeliveryHandler {
  constructor(
    private readonly config: HandlerConfig,
    private readonly invoke: HandlerInvoker,
    private readonly parker: MessageParker,
    private readonly park: ParkTarget,
    private readonly guard: TopologyGuard,
    private readonly logger: RetryLogger,
  ) {}

  readonly handle = async (message: ConsumeMessage, settle: Settle, signal: AbortSignal): Promise<void> => {
    const { queue, maxAttempts, delaysMs, queueType, deserializer } = this.config;
    const before = decideBeforeHandling({ message, queue, maxAttempts, queueType, deserializer });
    if (before.action === 'park') {
      const { reason, error, handlerCalls, deaths } = before;
      return this.parker.park(message, settle, this.park, { queue, deaths, reason, error, handlerCalls }, signal);
    }

    const { attempt, deaths } = before;
    const context: RetryContext = { attempt, maxAttempts, isLastAttempt: attempt >= maxAttempts, queue, message, deaths, signal };
    try {
      await this.invoke(before.payload, context);
    } catch (error) {
      const after = decideAfterFailure(attempt, maxAttempts, this.config.isRetryable(error), delaysMs.length, error);
      if (after.action === 'park')
        return this.parker.park(
          message,
          settle,
          this.park,
          { queue, deaths, reason: after.reason, error, handlerCalls: after.reason === 'malformed' ? attempt - 1 : attempt },
          signal,
        );
      if (!(await this.guarded(signal))) return; // the channel is gone: the broker redelivers the message
      this.logger.debug(
        `"${queue}" attempt ${attempt}/${maxAttempts} failed: ${errorMessage(error)}; retrying in ${formatDuration(delaysMs[after.tier - 1])}`,
      );
      return settle.nack(false);
    }
    settle.ack();
  };

  /** Waits until the retry topology is known to exist, trying again with backoff; false if the delivery's channel died first. */
  private async guarded(signal: AbortSignal): Promise<boolean> {
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        await this.guard.ensure();
        return true;
      } catch (error) {
        const delay = reconnectDelay(attempt, PARK_RETRY);
        this.logger.error(`"${this.config.queue}": ${errorMessage(error)}; the failed message waits, trying again in ${delay} ms`);
        await pause(delay, signal);
      }
    }
    return false;
  }
}
