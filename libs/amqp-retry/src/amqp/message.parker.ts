import type { Logger } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { errorMessage } from '../core/error-message.js';
import { parkedPublishOptions, type ParkInput } from '../core/parked-message.js';
import type { ConfirmPublisher } from './confirm.publisher.js';
import type { Settle } from './queue.consumer.js';

/** How long a message that could not be parked or forwarded stays unacknowledged before it is requeued. */
export const REQUEUE_PAUSE_MS = 1_000;

/** Puts a message back in its queue after a pause, so that a failure that persists cannot make it spin. */
export async function requeueAfterPause(settle: Settle): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, REQUEUE_PAUSE_MS));
  settle.nack(true);
}

/** What the parked copy says beyond the delivery itself. */
export type ParkDetails = Omit<ParkInput, 'properties' | 'now' | 'deliveredExchange' | 'deliveredRoutingKey'> &
  Partial<Pick<ParkInput, 'deliveredExchange' | 'deliveredRoutingKey'>>;

/**
 * Parks a delivery at least once: the copy (body and properties kept, parking headers added) is published to the
 * error queue and confirmed, and only then is the original acked. If the copy is not confirmed the original goes
 * back to its queue after a pause, so nothing is lost and nothing spins.
 */
export class MessageParker {
  constructor(
    private readonly publisher: ConfirmPublisher,
    private readonly logger: Logger,
  ) {}

  async park(message: ConsumeMessage, settle: Settle, errorQueue: string, details: ParkDetails): Promise<void> {
    const options = parkedPublishOptions({
      deliveredExchange: message.fields.exchange,
      deliveredRoutingKey: message.fields.routingKey,
      ...details,
      properties: message.properties,
      now: new Date(),
    });
    try {
      await this.publisher.publish('', errorQueue, message.content, options);
    } catch (publishError) {
      this.logger.error(
        `Could not park a message from "${details.queue}" in "${errorQueue}" (${errorMessage(publishError)}); it goes back to the queue`,
      );
      return requeueAfterPause(settle);
    }
    settle.ack();
    this.logger.warn(
      `Parked a message from "${details.queue}" in "${errorQueue}" (${details.reason} after ${details.handlerCalls} attempt${details.handlerCalls === 1 ? '' : 's'}): ${errorMessage(details.error)}`,
    );
  }
}
