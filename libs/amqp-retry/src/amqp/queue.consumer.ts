import type { Logger } from '@nestjs/common';
import type { Channel, ConsumeMessage } from 'amqplib';
import { errorMessage } from '../core/error-message.js';
import { reconnectDelay, type ReconnectPolicy } from '../core/reconnect.policy.js';
import { AckBatcher } from './ack.batcher.js';
import type { AmqpConnection } from './amqp-connection.js';

/** Settles one delivery on the channel that delivered it. */
export interface Settle {
  ack(): void;
  /** `requeue: false` dead-letters the message (the retry path); `true` puts it back in the queue. */
  nack(requeue: boolean): void;
}

/** Handles one delivery and settles it through `settle`; a rejection is logged (the message stays unacked). */
export type DeliveryHandler = (message: ConsumeMessage, settle: Settle) => Promise<void>;

export interface QueueConsumerOptions {
  queue: string;
  prefetch: number;
  connection: AmqpConnection;
  logger: Logger;
  /** Spacing of the attempts to resume after the broker closed the channel or cancelled the consumer. */
  resume: ReconnectPolicy;
  /** Declares the queue's topology again before resuming (it may have been deleted). */
  redeclare: () => Promise<unknown>;
}

/**
 * One consumer on one queue, on a channel of its own, with the channel's whole life: prefetch, deliveries in
 * flight, graceful stop, and resumption.
 *
 * The channel can die under it: with the connection (the connection's recovery calls `start()` again) or alone,
 * closed by the broker, or its consumer be cancelled (the queue was deleted): then it declares the topology again
 * and resumes, with backoff. Deliveries of a dead channel are never settled on another one (acks are valid only
 * on the channel that delivered): the broker requeued them, and they come back redelivered.
 */
export class QueueConsumer {
  private channel?: Channel;
  private batcher?: AckBatcher;
  private consumerTag?: string;
  private stopped = false;
  private resumeAttempt = 0;
  private resumeTimer?: NodeJS.Timeout;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly options: QueueConsumerOptions,
    private readonly handle: DeliveryHandler,
  ) {}

  /** Opens a channel and consumes; does nothing while a channel is open or after stop(). */
  async start(): Promise<void> {
    if (this.stopped || this.channel) return;
    const { connection, queue, prefetch } = this.options;
    const channel = await connection.createChannel(`queue "${queue}"`);
    const batcher = new AckBatcher(channel, (error) => this.dropped(error));
    this.channel = channel;
    this.batcher = batcher;
    // The broker closing this channel alone sends a reason first ('error'); a dying connection closes it silently.
    let brokerReason: string | undefined;
    channel.on('error', (error: Error) => (brokerReason = error.message));
    channel.on('close', () => this.onChannelClosed(channel, brokerReason));
    await channel.prefetch(prefetch);
    const { consumerTag } = await channel.consume(queue, (message) => this.track(channel, batcher, message), { noAck: false });
    this.consumerTag = consumerTag;
    this.resumeAttempt = 0;
  }

  /**
   * Stops taking deliveries, lets the deliveries in flight finish and settle for up to `timeoutMs`, then closes the
   * channel. Handlers still running then are abandoned: the broker requeues their messages when the channel closes.
   */
  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.resumeTimer);
    this.resumeTimer = undefined;
    const channel = this.channel;
    if (channel && this.consumerTag) await channel.cancel(this.consumerTag).catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      Promise.allSettled([...this.inFlight]).then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      this.options.logger.warn(
        `"${this.options.queue}": ${this.inFlight.size} handler(s) still running after ${timeoutMs} ms; closing, their messages will be redelivered`,
      );
    }
    this.batcher?.flush();
    this.channel = undefined;
    await channel?.close().catch(() => undefined);
  }

  private track(channel: Channel, batcher: AckBatcher, message: ConsumeMessage | null): void {
    if (message === null) return this.onCancelled(channel, batcher);
    batcher.delivered(message);
    const settle: Settle = { ack: () => batcher.ack(message), nack: (requeue) => batcher.nack(message, requeue) };
    const work = this.handle(message, settle)
      .catch((error: unknown) =>
        this.options.logger.error(`Unexpected failure handling a message from "${this.options.queue}": ${errorMessage(error)}`),
      )
      .finally(() => this.inFlight.delete(work));
    this.inFlight.add(work);
  }

  private dropped(error: unknown): void {
    this.options.logger.warn(
      `Dropped a settlement for "${this.options.queue}" on a closed channel (${errorMessage(error)}); the broker redelivers the message`,
    );
  }

  private onChannelClosed(channel: Channel, brokerReason: string | undefined): void {
    if (this.channel !== channel) return;
    this.channel = undefined;
    this.consumerTag = undefined;
    if (brokerReason === undefined) return; // it died with the connection, whose recovery restarts us
    this.scheduleResume(`The broker closed the channel consuming "${this.options.queue}" (${brokerReason})`);
  }

  /** The consumer was cancelled by the broker: the old channel settles what it delivered, a new one takes over. */
  private onCancelled(channel: Channel, batcher: AckBatcher): void {
    if (this.channel !== channel) return;
    this.channel = undefined;
    this.consumerTag = undefined;
    void Promise.allSettled([...this.inFlight]).then(() => {
      batcher.flush();
      return channel.close().catch(() => undefined);
    });
    this.scheduleResume(`The broker cancelled the consumer of "${this.options.queue}" (was the queue deleted?)`);
  }

  private scheduleResume(why: string): void {
    if (this.stopped || this.resumeTimer) return;
    const delay = reconnectDelay(++this.resumeAttempt, this.options.resume);
    this.options.logger.error(`${why}; declaring it again and resuming in ${delay} ms`);
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = undefined;
      this.options
        .redeclare()
        .then(() => this.start())
        .catch((error: unknown) => {
          if (this.options.connection.isConnected) this.scheduleResume(`Could not resume consuming "${this.options.queue}": ${errorMessage(error)}`);
        });
    }, delay);
  }
}
