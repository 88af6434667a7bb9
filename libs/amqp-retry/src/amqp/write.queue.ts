import { type DurationTimer, startTimer } from '../core/duration.timer.js';

/** How many waiting publishes are let through at once when the buffer has room. */
const RELEASE_BATCH = 64;

/**
 * Orders the writes to one channel while its socket's write buffer is full. amqplib's `publish()` returns false when
 * the buffer is full and buffers the message anyway, so a flood of publishes would otherwise pile up in memory.
 * Here the publishes that come while the buffer is full wait in line and are let through one at a time once it
 * drains, a batch at a time, each batch after the previous one has written (so a write that fills the buffer again
 * stops the line).
 * One timer per channel, not one per publish: a buffer that stays full for `stallMs` fails every waiting publish.
 */
export class WriteQueue {
  private full = false;
  /** Waiting publishes let through that have not written yet: newcomers stay behind them. */
  private passing = 0;
  private readonly waiting: Array<{ go: () => void; fail: (error: Error) => void }> = [];
  private stallTimer?: DurationTimer;

  constructor(private readonly stallMs: number) {}

  /** Undefined: write now. Otherwise resolves when it is the caller's turn; then write with no await in between. */
  turn(): Promise<void> | undefined {
    if (!this.full && this.passing === 0 && this.waiting.length === 0) return undefined;
    if (this.full) this.armStallTimer(); // also after an earlier stall: every wait is bounded
    return new Promise((go, fail) => this.waiting.push({ go, fail }));
  }

  /** After a turn's write, or its attempt that wrote nothing: `ok` is what amqplib's publish() returned. */
  written(ok: boolean): void {
    if (this.passing > 0) this.passing--;
    if (ok) return this.releaseNext();
    this.full = true;
    this.armStallTimer();
  }

  private armStallTimer(): void {
    this.stallTimer ??= startTimer(this.stallMs, () => this.stalled());
  }

  /** The socket drained: writing may go on. */
  drained(): void {
    this.full = false;
    this.stallTimer?.cancel();
    this.stallTimer = undefined;
    this.releaseNext();
  }

  /** The channel closed: every waiting publish goes on, finds it closed, and is sent again on a new one. */
  closed(): void {
    this.full = false;
    this.passing = 0;
    this.stallTimer?.cancel();
    this.stallTimer = undefined;
    for (const { go } of this.waiting.splice(0)) go();
  }

  /**
   * Lets the next batch through once the previous one has written: a batch at a time keeps the hand-offs few, and a
   * buffer that fills up in the middle of one takes at most RELEASE_BATCH - 1 writes more.
   */
  private releaseNext(): void {
    if (this.full || this.passing > 0) return;
    for (const { go } of this.waiting.splice(0, RELEASE_BATCH)) {
      this.passing++;
      go();
    }
  }

  private stalled(): void {
    this.stallTimer = undefined;
    const error = new Error(`the connection's write buffer stayed full for ${this.stallMs} ms (publishTimeout)`);
    for (const { fail } of this.waiting.splice(0)) fail(error);
  }
}
