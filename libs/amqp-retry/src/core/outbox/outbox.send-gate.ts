/**
 * Rows at least this large are published alone: the broker closes the channel over a message past max_message_size
 * (16 MiB on 4.x, 128 MiB on 3.x, or lower), failing every publish awaiting its confirm beside it.
 */
export const ALONE_FROM_BYTES = 1024 * 1024;

/**
 * Lets the relay's publishes go together, except `alone` runs: one at a time, in order, each once no run is in flight,
 * while the runs that come meanwhile wait for it.
 * @example await gate.run(row.body.length >= ALONE_FROM_BYTES, () => publish(row))
 */
export class SendGate {
  private inFlight = 0;
  /** Resolves when the `alone` runs queued so far have ended. */
  private aloneQueue: Promise<void> = Promise.resolve();
  /** How many `alone` runs are queued or running: while any is, shared runs wait for them. */
  private aloneWaiting = 0;
  private idle: Array<() => void> = [];

  async run<T>(alone: boolean, work: () => Promise<T>): Promise<T> {
    if (alone) return this.runAlone(work);
    while (this.aloneWaiting > 0) await this.aloneQueue;
    this.inFlight++;
    try {
      return await work();
    } finally {
      this.inFlight--;
      if (this.inFlight === 0) for (const resolve of this.idle.splice(0)) resolve();
    }
  }

  private async runAlone<T>(work: () => Promise<T>): Promise<T> {
    this.aloneWaiting++;
    const before = this.aloneQueue;
    let done!: () => void;
    this.aloneQueue = new Promise<void>((resolve) => (done = resolve));
    try {
      await before;
      // Alone from here: shared runs wait while `aloneWaiting` counts this one, the next alone run for `done`.
      if (this.inFlight > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
      return await work();
    } finally {
      this.aloneWaiting--;
      done();
    }
  }
}
