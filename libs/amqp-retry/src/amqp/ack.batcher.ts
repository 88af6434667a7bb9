import type { Channel, ConsumeMessage } from 'amqplib';
import { type AckEntry, planAckFlush } from '../core/delivery/ack.batch.js';

/** A delivery as its channel's batcher holds it until it is settled. */
export interface Unsettled extends AckEntry {
  readonly message: ConsumeMessage;
  ready: boolean;
}

/**
 * Settles one channel's deliveries, the acks of one event-loop turn together (a run of them as one `multiple` ack):
 * one socket write per ack is most of a consumer's CPU cost (bench/README.md). Nacks go out at once. Every delivery is
 * held from its arrival, handled or not, so that no `multiple` ack covers one still in flight.
 *
 * A settlement on a channel that is gone throws in amqplib; it goes to `onDropped`: the broker redelivers the message.
 */
export class AckBatcher {
  /** In delivery order; a flag on each, not a set of tags: a busy consumer pays no hashing per message. */
  private outstanding: Unsettled[] = [];
  private readyCount = 0;
  private flushScheduled = false;

  constructor(
    private readonly channel: Channel,
    private readonly onDropped: (error: unknown) => void,
  ) {}

  delivered(delivery: Unsettled): void {
    this.outstanding.push(delivery);
  }

  ack(delivery: Unsettled): void {
    delivery.ready = true;
    this.readyCount++;
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  nack(delivery: Unsettled, requeue: boolean): void {
    const at = this.outstanding.indexOf(delivery);
    if (at >= 0) this.outstanding.splice(at, 1);
    this.attempt(() => this.channel.nack(delivery.message, false, requeue));
  }

  /** Sends the acks now (before the channel closes). */
  flush(): void {
    this.flushScheduled = false;
    if (this.readyCount === 0) return;
    this.readyCount = 0;
    const { multipleUpTo, singles, remaining } = planAckFlush(this.outstanding);
    this.outstanding = remaining;
    if (multipleUpTo !== undefined) this.attempt(() => this.channel.ack(multipleUpTo.message, true));
    for (const delivery of singles) this.attempt(() => this.channel.ack(delivery.message));
  }

  private attempt(settle: () => void): void {
    try {
      settle();
    } catch (error) {
      this.onDropped(error);
    }
  }
}
