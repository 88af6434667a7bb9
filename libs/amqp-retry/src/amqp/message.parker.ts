import { randomUUID } from 'node:crypto';
import type { ConsumeMessage } from 'amqplib';
import { errorMessage } from '../core/error-message.js';
import { parkedPublishOptions, type ParkInput } from '../core/parked-message.js';
import { reconnectDelay, type ReconnectPolicy } from '../core/reconnect.policy.js';
import type { RetryLogger } from '../core/retry-logger.js';
import { PublishError } from '../errors/publish.error.js';
import type { ConfirmPublisher } from './confirm.publisher.js';
import type { Settle } from './queue.consumer.js';

/** What the parked copy says beyond the delivery itself. */
export type ParkDetails = Omit<ParkInput, 'properties' | 'now' | 'deliveredExchange' | 'deliveredRoutingKey'> &
  Partial<Pick<ParkInput, 'deliveredExchange' | 'deliveredRoutingKey'>>;

/** Where a delivery is parked, and how to declare that queue again should an operator have deleted it. */
export interface ParkTarget {
  errorQueue: string;
  redeclare: () => Promise<unknown>;
}

/** Spacing of the attempts to park a message whose park failed: soon at first, then at most every 30 s. */
export const PARK_RETRY: ReconnectPolicy = { initialDelayMs: 200, maxDelayMs: 30_000 };

/** Waits `ms`, or less if `signal` aborts first. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** True when a publish failed because its target queue or exchange is missing (returned, or a 404). */
export const isMissingTarget = (error: unknown): boolean =>
  error instanceof PublishError && (error.brokerCode === 404 || /returned as unroutable/.test(error.message));

/**
 * Parks a delivery at least once: the copy (body and properties kept, parking headers added) is published to the
 * error queue and confirmed, and only then is the original acked.
 *
 * A park that fails is tried again, with backoff, while the delivery stays unsettled: never by requeueing it, which
 * would run the handler again. A missing error queue is declared again first. The tries end only when the delivery's
 * channel is gone (`signal`), and then the broker redelivers the message.
 */
export class MessageParker {
  constructor(
    private readonly publisher: ConfirmPublisher,
    private readonly logger: RetryLogger,
  ) {}

  async park(message: ConsumeMessage, settle: Settle, target: ParkTarget, details: ParkDetails, signal: AbortSignal): Promise<void> {
    const { errorQueue } = target;
    const options = this.copyOptions(message, details);
    const patience = {
      signal,
      onSlowConfirm: (waitedMs: number) =>
        this.logger.warn(
          `A parked copy for "${errorQueue}" waits ${waitedMs} ms for the broker's confirm (is it blocking publishers?); the delivery stays unacked`,
        ),
    };
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        await this.publisher.publish('', errorQueue, message.content, options, patience);
      } catch (publishError) {
        const delay = reconnectDelay(attempt, PARK_RETRY);
        const missing = isMissingTarget(publishError);
        this.logger.error(
          `Could not park a message from "${details.queue}" in "${errorQueue}" (${errorMessage(publishError)}); ` +
            `${missing ? 'declaring the error queue again and ' : ''}trying again in ${delay} ms`,
        );
        if (missing)
          await target.redeclare().catch((error: unknown) => this.logger.error(`Could not declare "${errorQueue}": ${errorMessage(error)}`));
        await pause(delay, signal);
        continue;
      }
      settle.ack();
      this.logger.warn(
        `Parked a message from "${details.queue}" in "${errorQueue}" (${details.reason} after ${details.handlerCalls} attempt${details.handlerCalls === 1 ? '' : 's'}): ${errorMessage(details.error)}`,
      );
      return;
    }
  }

  /** The parked copy's properties; should building them fail on a value no test foresaw, a copy that says so. */
  private copyOptions(message: ConsumeMessage, details: ParkDetails) {
    const id = randomUUID(); // one per park, so that every try of this park publishes the same copy
    try {
      return parkedPublishOptions({
        deliveredExchange: message.fields.exchange,
        deliveredRoutingKey: message.fields.routingKey,
        ...details,
        properties: message.properties,
        now: new Date(),
        id,
      });
    } catch (error) {
      this.logger.error(`Could not build the parking headers (${errorMessage(error)}); parking with the reason only`);
      return {
        persistent: true,
        headers: {
          'x-parked-reason': details.reason,
          'x-exception-message': errorMessage(details.error),
          'x-parked-at': new Date().toISOString(),
          'x-original-queue': details.queue,
          'x-parked-id': id,
        },
      };
    }
  }
}
