/**
 * Rows at least this large are published alone on the relay's channel. The broker closes the channel over a message
 * larger than its max_message_size (a 406; 16 MiB by default on RabbitMQ 4.x, 128 MiB on 3.x, and an operator may
 * lower it), and a close fails every publish on the channel still awaiting its confirm: published alone, such a row
 * is parked with the broker's reason and no row beside it is sent again.
 */
export const ALONE_FROM_BYTES = 1024 * 1024;

/**
 * Lets the relay's publishes go together, except those that must go alone: an `alone` run waits until no run is in
 * flight, and the runs that come while it waits or runs wait for it to end. Runs that go alone go one at a time, in
 * the order they came. No I/O: it only orders promises.
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
    return alone ? this.runAlone(work) : this.runShared(work);
  }

  private async runShared<T>(work: () => Promise<T>): Promise<T> {
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
      if (this.inFlight > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
      this.inFlight++;
      try {
        return await work();
      } finally {
        this.inFlight--;
      }
    } finally {
      this.aloneWaiting--;
      done();
    }
  }
}
