import type { ConfirmChannel, Options } from 'amqplib';
import { abandonedReason, type PublishFailure } from '../core/publish/publish.outcome.js';
import type { QueuedWrite, WriteQueue } from '../core/publish/pending-writes.queue.js';
import type { DeadlineClock, DeadlineWait } from '../core/time/deadline.clock.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { PublishError } from '../errors/publish.error.js';
import type { PendingPublish } from './returned-publish.matcher.js';

/** A confirm channel of a ConfirmPublisher, with what its publishes wait on. */
export interface OpenChannel {
  channel: ConfirmChannel;
  /** Mandatory publishes awaiting their confirm, in publish order (a Set iterates in insertion order). */
  pending: Set<PendingPublish>;
  /** Why and with which code the broker closed the channel ('error' comes before 'close'). */
  closedBecause?: string;
  closedWithCode?: number;
  /** Publishes wait here while the socket's write buffer is full. */
  writes: WriteQueue;
  /** The confirm deadlines of the sends: one timer for the channel. */
  confirms: DeadlineClock<Publish>;
  /**
   * Set once retired after a nack: no new publish takes it, and it closes when none of its sends awaits a confirm and
   * none waits in its write line. Each send ends at its own deadline (confirmTimeout, or a patient send's signal).
   */
  retired: boolean;
}

/**
 * For publishes that must not be sent twice (parked copies, forwarded delayed messages): a confirm slower than
 * confirmTimeout is reported through `onSlowConfirm` and waited for until `signal` aborts, since a re-send would add a copy.
 */
export interface PublishPatience {
  signal: AbortSignal;
  onSlowConfirm: (waitedMs: number) => void;
}

/** What became of one send on one channel. */
export type SendOutcome =
  { kind: 'confirmed' } | { kind: 'failed'; failure: PublishFailure } | { kind: 'closed'; reason?: string; code?: number } | { kind: 'timeout' };

/** What a Publish asks of its publisher (ConfirmPublisher): its send, the broker's answer, the confirm clock, the outcome. */
export interface PublishDriver {
  write(publish: Publish, open: OpenChannel): void;
  answered(publish: Publish, error: unknown): void;
  settle(publish: Publish, outcome: SendOutcome): void;
  closeWhenIdle(open: OpenChannel): void;
}

/** One publish from the call to its outcome; its own entry in the write line, the confirm clock and the returns' matcher. */
export class Publish implements PendingPublish, QueuedWrite, DeadlineWait {
  readonly messageId?: string;
  /** Marked by a basic.return of this send (no queue took it); its ack follows. */
  returned = false;
  /** Sends closed under it without naming its exchange, this one included. */
  sends = 1;
  /** Why its last send ended with the channel, for the error if it cannot be sent again. */
  lastClose = '';
  /** The channel of its current (or next) send. */
  channel?: OpenChannel;
  sentAt = 0;
  due = 0;
  private sending = false;
  private abortListener?: () => void;
  /** amqplib's callback, made at the first send: a publish waiting in line holds none. */
  private callback?: (error: unknown) => void;

  constructor(
    private readonly publisher: PublishDriver,
    readonly exchange: string,
    readonly routingKey: string,
    readonly content: Buffer,
    readonly options: Options.Publish,
    readonly patience: PublishPatience | undefined,
    /** When the whole publish gives up (publishTimeout). */
    readonly deadline: number,
    readonly resolve: () => void,
    readonly reject: (error: Error) => void,
  ) {
    this.messageId = options.messageId;
  }

  /** Its turn in the write line came. */
  go(): void {
    this.publisher.write(this, this.channel as OpenChannel);
  }

  /** The write line gave up on it (the buffer stayed full). */
  fail(error: Error): void {
    if (this.channel) this.publisher.closeWhenIdle(this.channel);
    this.failWith(errorMessage(error));
  }

  failWith(reason: string): void {
    this.reject(new PublishError(this.exchange, this.routingKey, reason));
  }

  /** Its send's wait on the confirm clock ended: a patient publish waits on, any other times out. */
  onTimeout(waitedMs: number): boolean {
    if (!this.patience) {
      this.publisher.settle(this, { kind: 'timeout' });
      return false;
    }
    this.patience.onSlowConfirm(waitedMs);
    return true;
  }

  /** A send starts on `open`. */
  begin(open: OpenChannel): void {
    this.channel = open;
    this.returned = false;
    this.sending = true;
  }

  /** amqplib's callback for this publish's sends. */
  get confirmed(): (error: unknown) => void {
    return (this.callback ??= (error) => this.publisher.answered(this, error));
  }

  /** The listener that ends this send when its patience's signal aborts. */
  onAbort(): () => void {
    this.abortListener = () => this.publisher.settle(this, { kind: 'failed', failure: { reason: abandonedReason(this.patience?.signal) } });
    return this.abortListener;
  }

  /** Ends the send: its channel, or undefined if it was over already. */
  end(): OpenChannel | undefined {
    if (!this.sending) return undefined;
    this.sending = false;
    if (this.abortListener) this.patience?.signal.removeEventListener('abort', this.abortListener);
    this.abortListener = undefined;
    return this.channel;
  }
}
