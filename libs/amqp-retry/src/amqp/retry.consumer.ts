import type { Logger } from '@nestjs/common';
import type { Channel, ConsumeMessage } from 'amqplib';
import { decideAfterFailure, decideBeforeHandling, type ParkReason } from '../core/delivery.decision.js';
import { formatDuration } from '../core/duration.js';
import type { HandlerConfig } from '../core/handler-config.js';
import { parkedPublishOptions } from '../core/parked-message.js';
import type { RetryContext } from '../core/retry-context.js';
import { parseXDeath, rejectedCount, type XDeath } from '../core/x-death.parser.js';
import type { AmqpConnection } from './amqp-connection.js';
import type { ConfirmPublisher } from './confirm.publisher.js';

/** Calls the user's handler (through Nest's context: interceptors, filters). */
export type HandlerInvoker = (payload: unknown, context: RetryContext) => Promise<unknown>;

/** How long a message whose parking failed stays unacknowledged before it is requeued, so it cannot spin. */
const PARK_FAILURE_PAUSE_MS = 1_000;

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Consumes one handler queue: runs the handler on each delivery and settles it. Success acks; a retryable
 * failure nacks without requeue, so the broker moves the message through the tiers; anything else is parked
 * (published to the error queue and confirmed) and only then acked.
 */
export class RetryConsumer {
  private channel?: Channel;
  private consumerTag?: string;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly config: HandlerConfig,
    private readonly invoke: HandlerInvoker,
    private readonly parker: ConfirmPublisher,
    private readonly logger: Logger,
  ) {}

  async start(connection: AmqpConnection): Promise<void> {
    const channel = await connection.createChannel(`queue ${this.config.queue}`);
    await channel.prefetch(this.config.prefetch);
    this.channel = channel;
    const { consumerTag } = await channel.consume(this.config.queue, (message) => this.track(channel, message), { noAck: false });
    this.consumerTag = consumerTag;
  }

  /** Stops taking deliveries, lets the handlers in flight finish and settle, then closes the channel. */
  async stop(): Promise<void> {
    const channel = this.channel;
    if (!channel) return;
    this.channel = undefined;
    if (this.consumerTag) await channel.cancel(this.consumerTag).catch(() => undefined);
    await Promise.allSettled([...this.inFlight]);
    await channel.close().catch(() => undefined);
  }

  private track(channel: Channel, message: ConsumeMessage | null): void {
    if (message === null) {
      this.logger.warn(`The broker cancelled the consumer of "${this.config.queue}" (was the queue deleted?)`);
      return;
    }
    const work = this.handle(channel, message)
      .catch((error: unknown) => this.logger.error(`Unexpected failure handling a message from "${this.config.queue}": ${describe(error)}`))
      .finally(() => this.inFlight.delete(work));
    this.inFlight.add(work);
  }

  private async handle(channel: Channel, message: ConsumeMessage): Promise<void> {
    const { queue, maxAttempts, delaysMs } = this.config;
    const deaths = parseXDeath(message.properties.headers?.['x-death']);
    const attempt = 1 + rejectedCount(deaths, queue);
    const before = decideBeforeHandling(message.content, attempt, maxAttempts);
    if (before.action === 'park') return this.park(channel, message, deaths, before.reason, before.error, before.handlerCalls);

    const context: RetryContext = { attempt, maxAttempts, isLastAttempt: attempt >= maxAttempts, queue, message, deaths };
    try {
      await this.invoke(before.payload, context);
    } catch (error) {
      const after = decideAfterFailure(attempt, maxAttempts, this.config.isRetryable(error), delaysMs.length);
      if (after.action === 'park') return this.park(channel, message, deaths, after.reason, error, attempt);
      this.logger.debug(
        `"${queue}" attempt ${attempt}/${maxAttempts} failed: ${describe(error)}; retrying in ${formatDuration(delaysMs[after.tier - 1])}`,
      );
      return this.settle(() => channel.nack(message, false, false));
    }
    this.settle(() => channel.ack(message));
  }

  private async park(channel: Channel, message: ConsumeMessage, deaths: XDeath[], reason: ParkReason, error: unknown, handlerCalls: number) {
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
      return this.settle(() => channel.nack(message, false, true));
    }
    this.settle(() => channel.ack(message));
    this.logger.warn(`Parked a message from "${queue}" in "${errorQueue}" (${reason} after ${handlerCalls} attempts): ${describe(error)}`);
  }

  /**
   * Acks and nacks are valid only on the channel that delivered. When that channel is gone the broker has already
   * requeued the message, so the settlement is dropped: the message comes back, redelivered (at least once).
   */
  private settle(action: () => void): void {
    try {
      action();
    } catch (error) {
      this.logger.warn(`Dropped a settlement for "${this.config.queue}" on a closed channel (${describe(error)}); the broker redelivers the message`);
    }
  }
}
