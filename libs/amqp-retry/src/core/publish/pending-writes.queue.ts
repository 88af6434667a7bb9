import { type DurationTimer, startTimer } from '../time/duration.timer.js';

/** A write waiting for its turn: told to go (then it writes at once, with no await in between) or that it failed. */
export interface QueuedWrite {
  go(): void;
  fail(error: Error): void;
}

/**
 * Orders the writes to one channel while its socket's write buffer is full: amqplib's `publish()` buffers anyway, so a
 * flood would pile up in memory. Waiting writes go one at a time once it drains, until one fills it again. One timer
 * per channel: a buffer full for `stallMs` fails every waiting write.
 */
export class WriteQueue {
  private full = false;
  /** Writes let through that have not written yet (0 or 1): newcomers stay behind them. */
  private passing = 0;
  /** The line: `waiting[head]` is next; the slots before `head` are spent (compacted now and then). */
  private waiting: Array<QueuedWrite | undefined> = [];
  private head = 0;
  /** True while releaseNext() lets writes through: a write's written() inside it does not start another loop. */
  private releasing = false;
  private stallTimer?: DurationTimer;

  constructor(private readonly stallMs: number) {}

  /** How many writes wait in line. */
  get size(): number {
    return this.waiting.length - this.head;
  }

  /** False: write now. True: the write must wait in line (enqueue it). */
  mustWait(): boolean {
    return this.full || this.passing > 0 || this.size > 0;
  }

  /** Puts a write in line (after mustWait()): no promise of ours per write, so a flood holds only small records. */
  enqueue(write: QueuedWrite): void {
    if (this.full) this.armStallTimer(); // also after an earlier stall: every wait is bounded
    this.waiting.push(write);
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

  /** The channel closed: every waiting write goes on, finds it closed, and is sent again on a new one. */
  closed(): void {
    this.passing = 0;
    this.drained(); // as for a drain: the buffer is no longer full and the stall timer stops
  }

  /**
   * Lets waiting writes through one at a time (each `go` calls written()) until one fills the buffer. A loop, not a
   * recursion through written(): a long line never deepens the stack.
   */
  private releaseNext(): void {
    if (this.releasing) return;
    this.releasing = true;
    try {
      while (!this.full && this.passing === 0 && this.size > 0) {
        const next = this.take();
        this.passing++;
        next.go();
      }
    } finally {
      this.releasing = false;
    }
  }

  private stalled(): void {
    this.stallTimer = undefined;
    const error = new Error(`the connection's write buffer stayed full for ${this.stallMs} ms (publishTimeout)`);
    while (this.size > 0) this.take().fail(error);
  }

  /** The next write of the line, out of it. */
  private take(): QueuedWrite {
    const next = this.waiting[this.head] as QueuedWrite;
    this.waiting[this.head++] = undefined;
    if (this.head === this.waiting.length) {
      this.waiting = [];
      this.head = 0;
    } else if (this.head >= 4_096 && this.head * 2 >= this.waiting.length) {
      this.waiting = this.waiting.slice(this.head); // a long line drained half way: give the spent slots back
      this.head = 0;
    }
    return next;
  }
}
