import { setTimeout as realDelay } from 'node:timers/promises';
import type { MemoryBroker } from './memory.broker.js';
import type { VirtualClock } from './virtual.clock.js';

/** How long (real time) the driver waits for work that no virtual timer stands for, before it says what is stuck. */
const REAL_PATIENCE_MS = 5_000;

/**
 * How the driver watches for a handler that waits for something real: what the broker and the clock looked like when
 * it last saw them move, since when (real time), and whether its patience ran out (it then stops waiting for this call).
 */
interface Stillness {
  mark?: string;
  since?: bigint;
  spent?: boolean;
}

/** Moves the virtual clock for the harness: runs work (a start, a close) to its end, advances time, and settles. */
export class HarnessDriver {
  constructor(
    private readonly clock: VirtualClock,
    private readonly broker: MemoryBroker,
  ) {}

  /** Awaits `work`, moving the clock to the next timer whenever nothing else is left to do. */
  async run<T>(work: Promise<T>, what: string): Promise<T> {
    let done = false;
    const finished = () => (done = true);
    work.then(finished, finished);
    const realStart = process.hrtime.bigint();
    const still: Stillness = {};
    while (!done) {
      const ran = await this.clock.runUntil(this.clock.now);
      if (done) break;
      if (ran > 0) continue;
      const next = this.clock.next();
      if (next && (next.broker || !this.waitsForReal(still))) {
        await this.clock.runUntil(next.due);
        continue;
      }
      if (this.waitsForReal(still) && (await this.waitReal(still))) continue;
      if (next) {
        await this.clock.runUntil(next.due);
        continue;
      }
      await realDelay(1);
      if (Number(process.hrtime.bigint() - realStart) / 1e6 > REAL_PATIENCE_MS * 6) {
        throw new Error(`harness: waited ${REAL_PATIENCE_MS * 6} ms of real time for ${what}, with no timer left to run`);
      }
    }
    return work;
  }

  /**
   * Moves the clock by `ms`, running what falls due on the way in time order; a handler that waits for something real
   * is waited for (see waitsForReal), before the application's timers run and before it returns.
   */
  async advance(ms: number): Promise<void> {
    const until = this.clock.now + Math.max(0, ms);
    const still: Stillness = {};
    for (;;) {
      await this.clock.runUntil(this.clock.now);
      const next = this.clock.next();
      const due = next !== undefined && next.due <= until;
      if (due && (next.broker || !this.waitsForReal(still))) {
        await this.clock.runUntil(next.due);
        continue;
      }
      if (this.waitsForReal(still) && (await this.waitReal(still))) continue;
      if (!due) break;
      await this.clock.runUntil(next.due);
    }
    await this.clock.runUntil(until);
    await this.clock.runUntil(this.clock.now); // what the last timer made due now runs too: an advance ends with every consequence
  }

  /** Runs until the broker has nothing under way (see RetryHarness.settle), at most `limitMs` of virtual time. */
  async settle(limitMs: number): Promise<void> {
    const until = this.clock.now + limitMs;
    const still: Stillness = {};
    for (;;) {
      await this.clock.runUntil(this.clock.now);
      if (!this.busy()) return;
      const next = this.clock.next();
      if (next && next.due <= until && (next.broker || !this.waitsForReal(still))) {
        await this.clock.runUntil(next.due);
        continue;
      }
      if (this.waitsForReal(still) && (await this.waitReal(still))) continue;
      if (next && next.due <= until) {
        await this.clock.runUntil(next.due);
        continue;
      }
      if (next) throw new Error(`harness: still busy after ${limitMs} ms of virtual time: ${this.describe()}`);
      // Unacknowledged deliveries or an awaited consumer, and no timer: the application waits for something real. Give it time.
      if (!(await this.waitReal(still))) throw new Error(`harness: nothing moved for ${REAL_PATIENCE_MS} ms of real time: ${this.describe()}`);
    }
  }

  /**
   * Whether a handler waits for something real (I/O of its own): deliveries are unacknowledged and no timer the
   * application awaits is on the clock (only the library's unreferenced ones: a handler's timeout, a heartbeat). The
   * clock then stands still, so that the handler sees real time pass, until something moves or the patience runs out.
   */
  private waitsForReal(still: Stillness): boolean {
    return !still.spent && this.unacknowledged() > 0 && !this.clock.awaited();
  }

  /** Waits a real millisecond; false once nothing has moved for REAL_PATIENCE_MS (and for the rest of this call). */
  private async waitReal(still: Stillness): Promise<boolean> {
    const mark = `${this.clock.ran}/${this.unacknowledged()}/${this.clock.pending()}`;
    const now = process.hrtime.bigint();
    if (still.mark !== mark || still.since === undefined) Object.assign(still, { mark, since: now });
    if (Number(now - (still.since ?? now)) / 1e6 > REAL_PATIENCE_MS) {
      still.spent = true;
      return false;
    }
    await realDelay(1);
    return true;
  }

  private unacknowledged(): number {
    let count = 0;
    for (const queue of this.broker.queues.values()) count += queue.unackedCount;
    return count;
  }

  /** Queues whose consumers a lost connection took: the application will consume them again. */
  private readonly awaitedConsumers = new Set<string>();

  /**
   * Settling waits until the queues consumed now that outlive a lost connection (neither exclusive nor auto-delete)
   * have a consumer again, or are gone: called before connections are lost.
   */
  awaitConsumers(): void {
    for (const q of this.broker.queues.values()) {
      if (q.consumers.length > 0 && !q.declaration.autoDelete && q.owner === undefined) this.awaitedConsumers.add(q.name);
    }
  }

  /** Whether anything is under way: the broker's own work, an unacknowledged delivery, or an awaited consumer. */
  private busy(): boolean {
    for (const name of [...this.awaitedConsumers]) {
      const queue = this.broker.queues.get(name);
      if (!queue || queue.consumers.length > 0) this.awaitedConsumers.delete(name);
    }
    if (this.awaitedConsumers.size > 0) return true;
    if (this.clock.pending(true) > 0) return true;
    for (const queue of this.broker.queues.values()) if (queue.unackedCount > 0) return true;
    return false;
  }

  /** What is under way: the busy queues, the queues whose consumers are awaited, the application's timers. */
  private describe(): string {
    const queues = [...this.broker.queues.values()]
      .filter((q) => q.unackedCount > 0 || (q.ready.length > 0 && (q.consumers.length > 0 || q.ready.some((e) => e.expiresAt !== undefined))))
      .map((q) => `${q.name} (${q.ready.length} ready, ${q.unackedCount} unacknowledged)`);
    const awaited = [...this.awaitedConsumers].map((name) => `${name} (waiting for the application to consume it again)`);
    const timers = this.clock.pending() - this.clock.pending(true);
    const next = this.clock.next(false);
    const pending = next ? [`${timers} application timer${timers === 1 ? '' : 's'} (the next due in ${next.due - this.clock.now} ms)`] : [];
    const brokerTasks = this.clock.pending(true);
    const parts = [...queues, ...awaited, ...pending, ...(brokerTasks > 0 ? [`${brokerTasks} broker tasks`] : [])];
    return parts.length > 0 ? parts.join(', ') : 'nothing';
  }
}
