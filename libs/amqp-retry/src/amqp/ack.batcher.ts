import type { Channel, ConsumeMessage } from 'amqplib';
import { planAckFlush } from '../core/delivery/ack.batch.js';

/**
 * Settles one channel's deliveries, the acks of one event-loop turn together (a run of them as one `multiple` ack):
 * one socket write per ack is most of a consumer's CPU cost (bench/README.md). Nacks go out at once.
 *
 * A settlement on a channel that is gone throws in amqplib; it goes to `onDropped`: the broker redelivers the message.
 */
export class AckBatcher {
  private outstanding: number[] = [];
  private readonly ready = new Set<number>();
  private readonly messages = new Map<number, ConsumeMessage>();
  private flushScheduled = false;

  constructor(
    private readonly channel: Channel,
    private readonly onDropped: (error: unknown) => void,
  ) {}

  delivered(message: ConsumeMessage): void {
    const tag = message.fields.deliveryTag;
    this.outstanding.push(tag);
    this.messages.set(tag, message);
  }

  ack(message: ConsumeMessage): void {
    this.ready.add(message.fields.deliveryTag);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  nack(message: ConsumeMessage, requeue: boolean): void {
    const tag = message.fields.deliveryTag;
    this.outstanding = this.outstanding.filter((t) => t !== tag);
    this.messages.delete(tag);
    this.attempt(() => this.channel.nack(message, false, requeue));
  }

  /** Sends the acks now (before the channel closes). */
  flush(): void {
    this.flushScheduled = false;
    if (this.ready.size === 0) return;
    const { outstanding, messages } = this;
    const { multipleUpTo, singles, remaining } = planAckFlush(outstanding, this.ready);
    this.outstanding = remaining;
    if (multipleUpTo !== undefined) {
      this.attempt(() => this.channel.ack(messages.get(multipleUpTo) as ConsumeMessage, true));
      for (let i = 0; i < outstanding.length && outstanding[i] <= multipleUpTo; i++) messages.delete(outstanding[i]);
    }
    for (const tag of singles) {
      this.attempt(() => this.channel.ack(messages.get(tag) as ConsumeMessage));
      messages.delete(tag);
    }
    this.ready.clear();
  }

  private attempt(settle: () => void): void {
    try {
      settle();
    } catch (error) {
      this.onDropped(error);
    }
  }
}
