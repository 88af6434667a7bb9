import { performance as hooksPerformance } from 'node:perf_hooks';
import { setTimeout as realSetTimeout } from 'node:timers';
import type { MemoryBroker } from './memory.broker.js';
import type { HandlerCall, VirtualClock } from './virtual.clock.js';

/**
 * How long (real milliseconds) the driver waits, by default, for work that no virtual timer stands for before it says
 * what is stuck: well inside Jest's default timeout of 5 s for a test or hook, so that its error, naming what is stuck,
 * comes before Jest's.
 */
export const DEFAULT_REAL_PATIENCE_MS = 2_000;

/**
 * Real milliseconds, read before any clock stands in for time: `node:perf_hooks`' own `performance.now` as this module
 * loads (Jest's fake timers replace the global `performance` and `process.hrtime`, not this one; the virtual clock
 * replaces it only once installed).
 */
const realNow: () => number = hooksPerformance.now.bind(hooksPerformance);

/**
 * Waits `ms` of real time: `node:timers`' own `setTimeout` stays real under Jest's fake timers (they replace the
 * global one) and under the virtual clock (which replaces the global one and `node:timers/promises`).
 */
const realDelay = (ms: number): Promise<void> => new Promise((resolve) => realSetTimeout(resolve, ms));

/**
 * How the driver watches for a handler that waits for something real: what the broker and the clock looked like when
 * it last saw them move, since when (real milliseconds), and the deliveries whose patience ran out (it then stops
 * waiting for them in this call; a delivery that starts waiting later gets patience of its own).
 */
type Stillness = { mark?: string; since?: number; readonly spent: Set<HandlerCall> };
const stillness = (): Stillness => ({ spent: new Set() });

/** Moves the virtual clock for the harness: runs work (a start, a close) to its end, advances time, and settles. */
export class HarnessDriver {
  constructor(
    private readonly clock: VirtualClock,
    private readonly broker: MemoryBroker,
    /** How long (real milliseconds) a handler that waits for something real is waited for while nothing moves. */
    private readonly patienceMs: number = DEFAULT_REAL_PATIENCE_MS,
  ) {}

  /** Awaits `work`, moving the clock to the next timer whenever nothing else is left to do. */
  async run<T>(work: Promise<T>, what: string): Promise<T> {
    let done = false;
    const finished = () => (done = true);
    work.then(finished, finished);
    const realStart = realNow();
    const still = stillness();
    while (!done) {
      const ran = await this.clock.runUntil(this.clock.now);
      if (done) break;
      if (ran > 0 || (await this.step(still, this.clock.next(), Infinity))) continue;
      await realDelay(1);
      if (realNow() - realStart > this.patienceMs * 6) {
        throw new Error(`harness: waited ${this.patienceMs * 6} ms of real time for ${what}, with no timer left to run`);
      }
    }
    return work;
  }

  /**
   * Moves the clock by `ms`, running what falls due on the way in time order; a handler that waits for something real
   * is waited for (see waitsForReal), before the application's timers run and before it returns.
   */
  async advance(ms: number): Promise<void> {
    this.checkTimers();
    const until = this.clock.now + Math.max(0, ms);
    const still = stillness();
    for (;;) {
      await this.clock.runUntil(this.clock.now);
      if (!(await this.step(still, this.clock.next(), until))) break;
    }
    await this.clock.runUntil(until);
    await this.clock.runUntil(this.clock.now); // what the last timer made due now runs too: an advance ends with every consequence
  }

  /** Runs until the broker has nothing under way (see RetryHarness.settle), at most `limitMs` of virtual time. */
  async settle(limitMs: number): Promise<void> {
    this.checkTimers();
    const until = this.clock.now + limitMs;
    const still = stillness();
    for (;;) {
      await this.clock.runUntil(this.clock.now);
      if (!this.busy()) return;
      const next = this.clock.next();
      if (await this.step(still, next, until)) continue;
      if (next) throw new Error(`harness: still busy after ${limitMs} ms of virtual time: ${this.describe()}`);
      // Unacknowledged deliveries or an awaited consumer, and no timer: the application waits for something real. Give it
      // time, unless all it waits for is deliveries whose patience ran out in this call already.
      if (this.givenUp(still) || !(await this.waitReal(still)))
        throw new Error(`harness: nothing moved for ${this.patienceMs} ms of real time: ${this.describe()}`);
    }
  }

  /**
   * Moves on by one step: runs `next` when it is due by `until` and either the broker's own work or no handler waits for
   * something real; else waits a real millisecond for such a handler while its patience lasts; else runs `next` when
   * due. False when nothing moved (no task due, and nobody waiting for something real).
   */
  private async step(still: Stillness, next: ReturnType<VirtualClock['next']>, until: number): Promise<boolean> {
    const due = next !== undefined && next.due <= until;
    if (due && (next.broker || !this.waitsForReal(still))) {
      await this.clock.runUntil(next.due);
      return true;
    }
    if (this.waitsForReal(still) && (await this.waitReal(still))) return true;
    if (!due) return false;
    await this.clock.runUntil(next.due);
    return true;
  }

  /**
   * Whether a handler waits for something real (I/O of its own): a delivery is unanswered and no referenced timer set
   * by its own handler waits on the clock (the library's timers, a handler's timeout among them, are unreferenced; a
   * timer set outside every delivery, such as a module's refresher, is no handler's). The clock then stands still, so
   * that the handler sees real time pass, until something moves or its patience runs out.
   */
  private waitsForReal(still: Stillness): boolean {
    return this.clock.waitingForReal().some((call) => !still.spent.has(call));
  }

  /** Waits a real millisecond; false once nothing has moved for the patience (the deliveries waiting then are given up on). */
  private async waitReal(still: Stillness): Promise<boolean> {
    const mark = `${this.clock.ran}/${this.unacknowledged()}/${this.clock.pending()}`;
    const now = realNow();
    if (still.mark !== mark || still.since === undefined) Object.assign(still, { mark, since: now });
    if (now - (still.since ?? now) > this.patienceMs) {
      for (const call of this.clock.waitingForReal()) still.spent.add(call);
      return false;
    }
    await realDelay(1);
    return true;
  }

  /** Whether the deliveries waiting for something real are all ones given up on in this call, and nothing else is awaited. */
  private givenUp(still: Stillness): boolean {
    const waiting = this.clock.waitingForReal();
    return waiting.length > 0 && waiting.every((call) => still.spent.has(call)) && this.awaitedConsumers.size === 0;
  }

  /**
   * Fails when the global timers are no longer the harness's clock (Jest's fake timers turned on after the start):
   * the library's timers would go to them and never run, and settling would wait for ever.
   */
  private checkTimers(): void {
    if (this.clock.standsIn()) return;
    throw new Error(
      "harness: the global timers are no longer the harness's virtual clock (jest.useFakeTimers() after RetryHarness.start?), " +
        "so the library's timers would never run. Call jest.useFakeTimers() before RetryHarness.start, or not at all: while " +
        'the harness runs, its clock is the test clock; move it with harness.advance(), not jest.advanceTimersByTime().',
    );
  }

  private unacknowledged(): number {
    return [...this.broker.queues.values()].reduce((count, queue) => count + queue.unackedCount, 0);
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
    if (this.awaitedConsumers.size > 0 || this.clock.pending(true) > 0) return true;
    return [...this.broker.queues.values()].some((queue) => queue.unackedCount > 0);
  }

  /** What is under way: the busy queues, the queues whose consumers are awaited, dead letters held, the application's timers. */
  private describe(): string {
    const queues = [...this.broker.queues.values()]
      .filter((q) => q.unackedCount > 0 || (q.ready.length > 0 && (q.consumers.length > 0 || q.ready.some((e) => e.expiresAt !== undefined))))
      .map((q) => `${q.name} (${q.ready.length} ready, ${q.unackedCount} unacknowledged)`);
    const awaited = [...this.awaitedConsumers].map((name) => `${name} (waiting for the application to consume it again)`);
    const timers = this.clock.pending() - this.clock.pending(true);
    const next = this.clock.next(false);
    const pending = next ? [`${timers} application timer${timers === 1 ? '' : 's'} (the next due in ${next.due - this.clock.now} ms)`] : [];
    const held = [...this.broker.queues.values()]
      .filter((q) => q.heldDeadLetters.size > 0)
      .map(
        ({ name, heldDeadLetters: { size } }) => `${name} (${size} dead letter${size === 1 ? '' : 's'} its target refused, tried again every 3 min)`,
      );
    const brokerTasks = this.clock.pending(true);
    const parts = [...queues, ...awaited, ...held, ...pending, ...(brokerTasks > 0 ? [`${brokerTasks} broker tasks`] : [])];
    return parts.length > 0 ? parts.join(', ') : 'nothing';
  }
}
