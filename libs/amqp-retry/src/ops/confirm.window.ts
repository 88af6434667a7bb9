import type { ConfirmChannel, Message, Options } from 'amqplib';
import { findReturnedPublish, type PendingPublish } from '../amqp/returned-publish.matcher.js';

/**
 * Publishes held by a replay waiting for their confirm. One at a time, a persistent message waits for the queue's
 * disk sync before its confirm: 48 ms each on this machine (5,000 replays took 4 minutes). A window lets the broker
 * batch them; its size bounds what a crash can duplicate (copies routed whose parked originals were not acked yet).
 */
export const REPLAY_WINDOW = 32;

type Outcome = 'routed' | 'returned';
interface InFlight extends PendingPublish {
  done: (error: unknown, outcome: Outcome) => void;
}

/**
 * Mandatory publishes through the default exchange with at most `size` unconfirmed at once. Each publish's callback
 * runs when the broker confirmed it (routed, or returned first because no queue has that name) or refused it.
 */
export class ConfirmWindow {
  private readonly inFlight = new Set<InFlight>();
  private readonly waiters: (() => void)[] = [];
  private readonly onReturn = (message: Message) => {
    const publish = findReturnedPublish(this.inFlight, message);
    if (publish) publish.returned = true;
  };

  constructor(
    private readonly channel: ConfirmChannel,
    private readonly size = REPLAY_WINDOW,
  ) {
    channel.on('return', this.onReturn);
  }

  /** Waits for room in the window, then publishes; `done` runs on the confirm. */
  async publish(queue: string, content: Buffer, options: Options.Publish, done: (error: unknown, outcome: Outcome) => void): Promise<void> {
    while (this.inFlight.size >= this.size) await new Promise<void>((resolve) => this.waiters.push(resolve));
    const entry: InFlight = { exchange: '', routingKey: queue, messageId: options.messageId, content, returned: false, done };
    this.inFlight.add(entry);
    this.channel.publish('', queue, content, { ...options, mandatory: true }, (error: unknown) => {
      this.inFlight.delete(entry);
      try {
        entry.done(error, entry.returned ? 'returned' : 'routed');
      } finally {
        this.waiters.shift()?.();
      }
    });
  }

  /** Waits until every publish is confirmed (or refused). */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.channel.off('return', this.onReturn);
  }
}
