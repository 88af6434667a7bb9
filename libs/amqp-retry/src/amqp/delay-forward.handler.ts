import type { Logger } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { readDelayTarget, withoutDelayDeaths, type DelayTarget, type DelayTopology } from '../core/delay.plan.js';
import type { ParkReason } from '../core/delivery.decision.js';
import { republishProperties } from '../core/message-properties.js';
import { PublishError } from '../errors/publish.error.js';
import type { ConfirmPublisher } from './confirm.publisher.js';
import type { Settle } from './queue.consumer.js';
import { errorMessage } from '../core/error-message.js';
import { requeueAfterPause, type MessageParker } from './message.parker.js';

const NOT_FOUND = 404;

/**
 * The last step of a delayed delivery: a due message from the ladder's ready queue is published to the exchange and
 * routing key its headers name, as if published now (every exchange type routes it as it would have then), and
 * acked once the broker confirmed the copy. The ladder's dead-letter history is dropped from the copy.
 *
 * A message without target headers, or whose target exchange no longer exists, is parked in the ladder's error
 * queue; any other failure puts it back after a pause (at least once, never lost).
 */
export class DelayForwardHandler {
  constructor(
    private readonly ladder: DelayTopology,
    private readonly publisher: ConfirmPublisher,
    private readonly parker: MessageParker,
    private readonly logger: Logger,
  ) {}

  readonly handle = async (message: ConsumeMessage, settle: Settle): Promise<void> => {
    const headers = message.properties.headers ?? {};
    const target = readDelayTarget(headers);
    if (!target) return this.park(message, settle, 'malformed', new Error('a delayed message without x-delay-target-exchange/-routing-key headers'));
    try {
      const copy = republishProperties(message.properties, withoutDelayDeaths(headers, this.ladder.prefix));
      await this.publisher.publish(target.exchange, target.routingKey, message.content, { ...copy, mandatory: false });
    } catch (error) {
      if (error instanceof PublishError && error.brokerCode === NOT_FOUND) return this.park(message, settle, 'undeliverable', error, target);
      this.logger.error(`Could not forward a delayed message to "${target.exchange}" (${errorMessage(error)}); it goes back to the queue`);
      return requeueAfterPause(settle);
    }
    settle.ack();
  };

  private park(message: ConsumeMessage, settle: Settle, reason: ParkReason, error: unknown, target?: DelayTarget): Promise<void> {
    const { readyQueue, errorQueue } = this.ladder;
    return this.parker.park(message, settle, errorQueue, {
      reason,
      error,
      handlerCalls: 0,
      queue: readyQueue,
      deaths: [],
      deliveredExchange: target?.exchange,
      deliveredRoutingKey: target?.routingKey,
    });
  }
}
