import type { ConfirmChannel, Message, Options } from 'amqplib';
import { findReturnedPublish, type PendingPublish } from '../amqp/returned-publish.matcher.js';
import { errorMessage } from '../core/text/error-message.format.js';

/**
 * Publishes held by a replay waiting for their confirm. One at a time, a persistent message waits for the queue's
 * disk sync before its confirm: 48 ms each on this machine (5,000 replays took 4 minutes). A window lets the broker
 * batch them; its size bounds what a crash can duplicate (copies routed whose parked originals were not acked yet).
 */
export const REPLAY_WINDOW = 32;

/**
 * What became of a publish: confirmed `routed`, or `returned` first because no queue has that name; `nacked` (the
 * broker refused it, the error says why); `unconfirmed` when the channel or its connection closed before the confirm
 * came, so that it may or may not have been delivered; `unsent` when amqplib could not encode it (a queue name longer
 * than 255 bytes), so that nothing went out.
 */
export type Outcome = 'routed' | 'returned' | 'nacked' | 'unconfirmed' | 'unsent';
interface InFlight extends PendingPublish {
  done: (outcome: Outcome, error?: unknown) => void;
}

/** amqplib's error for a publish the broker nacked; a channel that closes fails its unconfirmed publishes otherwise. */
const NACKED = 'message nacked';

/** Mandatory publishes through the default exchange with at most `size` unconfirmed at once, each told its Outcome. */
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

  /** Waits for room in the window, then publishes; `done` runs on the confirm, the nack or the close. */
  async publish(queue: string, content: Buffer, options: Options.Publish, done: (outcome: Outcome, error?: unknown) => void): Promise<void> {
    while (this.inFlight.size >= this.size) await new Promise<void>((resolve) => this.waiters.push(resolve));
    const entry: InFlight = { exchange: '', routingKey: queue, messageId: options.messageId, content, returned: false, done };
    this.inFlight.add(entry);
    const settle = (outcome: Outcome, error?: unknown) => {
      this.inFlight.delete(entry);
      try {
        entry.done(outcome, error);
      } finally {
        this.waiters.shift()?.();
      }
    };
    try {
      this.channel.publish('', queue, content, { ...options, mandatory: true }, (error: unknown) => {
        if (!error) settle(entry.returned ? 'returned' : 'routed');
        else settle(errorMessage(error) === NACKED ? 'nacked' : 'unconfirmed', error);
      });
    } catch (error) {
      // amqplib encodes the whole publish before it writes any of it, and waits for no confirm of one it threw on: the
      // channel is as it was, and the copies in flight and the next ones go on.
      settle('unsent', error);
    }
  }

  /** Waits until every publish is confirmed (or refused). */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.channel.off('return', this.onReturn);
  }
}
