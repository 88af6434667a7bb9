import type { Channel, ConsumeMessage } from 'amqplib';

/**
 * The library's ack coalescing (libs/amqp-retry/src/amqp/ack.batcher.ts), rewritten for the raw baseline so that
 * it owes nothing to the library's code: the acks of one event-loop turn leave as one frame, a `multiple` ack up to
 * the last handled delivery. The library needs a plan for handlers that finish out of order; here the handler is
 * synchronous, so deliveries are handled in the order they came and the handled ones are always one run from the
 * oldest unacked delivery: acking up to the newest covers exactly them.
 */
export class AckCoalescer {
  private newest: ConsumeMessage | undefined;
  private pending = 0;

  constructor(private readonly channel: Channel) {}

  handled(message: ConsumeMessage): void {
    this.newest = message;
    if (this.pending++ === 0) setImmediate(() => this.flush());
  }

  /** Sends the pending acks now; also before the channel closes, so none is lost with it. */
  flush(): void {
    if (!this.newest) return;
    // A run of one is a plain ack, as the library sends it.
    this.channel.ack(this.newest, this.pending > 1);
    this.newest = undefined;
    this.pending = 0;
  }
}
