import type { Logger } from '@nestjs/common';
import type { Channel, ConsumeMessage } from 'amqplib';
import { decideAfterFailure, decideBeforeHandling, type ParkReason } from '../core/delivery.decision.js';
import { formatDuration } from '../core/duration.js';
import { reconnectDelay, type ReconnectPolicy } from '../core/reconnect.policy.js';
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

export interface ConsumerDependencies {
  connection: AmqpConnection;
  parker: ConfirmPublisher;
  logger: Logger;
  /** Spacing of the attempts to resume after the broker closed the channel or cancelled the consumer. */
  reopen: ReconnectPolicy;
  /** Declares this handler's topology again (the queue may have been deleted). */
  redeclare: () => Promise<void>;
}

/**
 * Consumes one handler queue: runs the handler on each delivery and settles it. Success acks; a retryable
 * failure nacks without requeue, so the broker moves the message through the tiers; anything else is parked
 * (published to the error queue and confirmed) and only then acked.
 *
 * Its channel can die under it: with the connection (the connection's recovery calls `start()` again) or alone,
 * closed by the broker, or its consumer be cancelled (the queue was deleted): then it declares its topology again
 * and resumes, with backoff. Deliveries of a dead channel are never settled on another one: the broker requeued
 * them, and they come back redelivered.
 */
export class RetryConsumer {
  private channel?: Channel;
  private consumerTag?: string;
  private stopped = false;
  private reopenAttempt = 0;
  private reopenTimer?: NodeJS.Timeout;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly logger: Logger;

  constructor(
    private readonly config: HandlerConfig,
    private readonly invoke: HandlerInvoker,
    private readonly deps: ConsumerDependencies,
  ) {
    this.logger = deps.logger;
  }

  /** Opens a channel and consumes; does nothing while a channel is open or after stop(). */
  async start(): Promise<void> {
    if (this.stopped || this.channel) return;
    const channel = await this.deps.connection.createChannel(`queue "${this.config.queue}"`);
    this.channel = channel;
    // The broker closing this channel alone sends a reason first ('error'); a dying connection closes it silently.
    let brokerReason: string | undefined;
    channel.on('error', (error: Error) => (brokerReason = error.message));
    channel.on('close', () => this.onChannelClosed(channel, brokerReason));
    await channel.prefetch(this.config.prefetch);
    const { consumerTag } = await channel.consume(this.config.queue, (message) => this.track(channel, message), { noAck: false });
    this.consumerTag = consumerTag;
    this.reopenAttempt = 0;
  }

  /**
   * Stops taking deliveries, lets the handlers in flight finish and settle for up to `timeoutMs`, then closes the
   * channel. Handlers still running then are abandoned: the broker requeues their messages when the channel closes.
   */
  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reopenTimer);
    this.reopenTimer = undefined;
    const channel = this.channel;
    if (channel && this.consumerTag) await channel.cancel(this.consumerTag).catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      Promise.allSettled([...this.inFlight]).then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      this.logger.warn(
        `"${this.config.queue}": ${this.inFlight.size} handler(s) still running after ${timeoutMs} ms; closing, their messages will be redelivered`,
      );
    }
    this.channel = undefined;
    await channel?.close().catch(() => undefined);
  }

  private onChannelClosed(channel: Channel, brokerReason: string | undefined): void {
    if (this.channel !== channel) return;
    this.channel = undefined;
    this.consumerTag = undefined;
    if (brokerReason === undefined) return; // it died with the connection, whose recovery restarts us
    this.scheduleResume(`The broker closed the channel consuming "${this.config.queue}" (${brokerReason})`);
  }

  /** The consumer was cancelled by the broker: the old channel settles what it delivered, a new one takes over. */
  private onCancelled(channel: Channel): void {
    if (this.channel !== channel) return;
    this.channel = undefined;
    this.consumerTag = undefined;
    void Promise.allSettled([...this.inFlight]).then(() => channel.close().catch(() => undefined));
    this.scheduleResume(`The broker cancelled the consumer of "${this.config.queue}" (was the queue deleted?)`);
  }

  private scheduleResume(why: string): void {
    if (this.stopped || this.reopenTimer) return;
    const delay = reconnectDelay(++this.reopenAttempt, this.deps.reopen);
    this.logger.error(`${why}; declaring it again and resuming in ${delay} ms`);
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = undefined;
      this.deps
        .redeclare()
        .then(() => this.start())
        .catch((error: unknown) => {
          if (this.deps.connection.isConnected) this.scheduleResume(`Could not resume consuming "${this.config.queue}": ${describe(error)}`);
        });
    }, delay);
  }

  private track(channel: Channel, message: ConsumeMessage | null): void {
    if (message === null) return this.onCancelled(channel);
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
      await this.deps.parker.publish('', errorQueue, message.content, options);
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
