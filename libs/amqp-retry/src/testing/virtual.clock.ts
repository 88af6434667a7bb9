import { AsyncLocalStorage } from 'node:async_hooks';
import { syncBuiltinESMExports } from 'node:module';
import { nextTick as realNextTick } from 'node:process';
import { performance as hooksPerformance } from 'node:perf_hooks';
import { setImmediate as realSetImmediate } from 'node:timers';
import timersPromises from 'node:timers/promises';
import { promiseTimers, timerDelay } from './promise.timers.js';

/**
 * One delivery's call into its consumer, from the delivery until its ack, nack or reject: the timers set inside it
 * (in its asynchronous context) are its own.
 */
export class HandlerCall {}

/** One task on the virtual clock (a timer, once or repeated, or an immediate), and what `setTimeout` returns for it. */
export class Task {
  cancelled = false;
  private referenced = true;

  constructor(
    private readonly clock: VirtualClock,
    readonly id: number,
    public due: number,
    /** Order among tasks due at the same time: the order they were scheduled in. */
    public seq: number,
    readonly run: () => void,
    /** The broker's own work (a message's expiry, a delivery), as opposed to the application's timers. */
    readonly broker: boolean,
    /** A one-shot timer's delay, which `refresh()` counts again from now. */
    readonly delay: number,
    readonly every?: number,
    /** The delivery whose handler set it (undefined: set outside any, e.g. by a module's init or an interval of its own). */
    readonly owner?: HandlerCall,
  ) {}

  ref(): this {
    this.referenced = true;
    return this;
  }
  unref(): this {
    this.referenced = false;
    return this;
  }
  hasRef(): boolean {
    return this.referenced;
  }
  refresh(): this {
    this.clock.reschedule(this);
    return this;
  }
  close(): this {
    this.clock.cancel(this);
    return this;
  }
  /** `using timer = setTimeout(...)` clears it at the end of the scope, as Node's timers do. */
  [Symbol.dispose](): void {
    this.clock.cancel(this);
  }
  [Symbol.toPrimitive](): number {
    return this.id;
  }
}

type TimerArg = Task | number | string | undefined | null;

/**
 * Marks the `setTimeout` an installed clock puts on the global object, naming that clock. The global timers are
 * process state the clock owns while installed, so the mark on them says whether a clock runs in this process,
 * without any state of this module's own (and across copies of the library).
 */
const INSTALLED = Symbol.for('nestjs-amqp-retry.virtual-clock');

/** The clock the global `setTimeout` is marked with: the one standing in for the global timers, if any. */
const installedClock = (): VirtualClock | undefined =>
  ((globalThis as unknown as Record<string, unknown>).setTimeout as { [INSTALLED]?: VirtualClock } | undefined)?.[INSTALLED];

/**
 * Marks a stand-in install() puts on an object every test file of the process shares, naming what it stands in for:
 * Node's own function and the property as it was. A clock that finds one there (a harness another test file left
 * running) takes Node's own from it, never the stand-in.
 */
const STANDS_IN = Symbol.for('nestjs-amqp-retry.virtual-clock.stands-in');

/** What a shared stand-in stands in for. */
interface StoodIn {
  original: (...args: unknown[]) => unknown;
  descriptor: PropertyDescriptor | undefined;
}

/** A property install() replaces: its object and its name. */
type Property = [target: Record<string, unknown>, name: string];

/**
 * Time for the test harness: a clock that moves only when told, with its own timers. While installed it stands in for
 * the global timers and `Date` (Node's, or Jest's fake timers). It stands in too for what every test file of the
 * process shares (Jest gives each file its own global object, but not its own builtin modules or `AbortSignal`):
 * `performance.now()`, `node:timers/promises` (its module object, and the named imports of ES modules, which read it
 * through their live bindings) and `AbortSignal.timeout`; those answer with virtual time only to code the clock runs
 * (see within), and with Node's own to any other, so that a clock left installed by one test file leaves the next
 * file's time alone. Microtasks stay real: between two tasks the clock lets every pending promise settle (a turn of
 * Node's real event loop), so that awaiting code runs as it would.
 */
export class VirtualClock {
  /** Milliseconds since the epoch, as `Date.now()` says while installed. */
  now: number;
  private readonly started: number;
  private readonly perfBase: number;
  private readonly tasks = new Map<number, Task>();
  private nextId = 1;
  private nextSeq = 1;
  private restore?: () => void;
  /** The delivery whose handler code runs now, through every await and timer of its own. */
  private readonly calls = new AsyncLocalStorage<HandlerCall>();
  /** The deliveries not yet acknowledged, nacked or rejected. */
  private readonly openCalls = new Set<HandlerCall>();
  /** The code this clock runs (see within), through every await and timer of its own. */
  private readonly scope = new AsyncLocalStorage<VirtualClock>();

  constructor(startAt: number = Date.now()) {
    this.now = startAt;
    this.started = startAt;
    this.perfBase = performance.now();
  }

  /** Milliseconds since the clock was made. */
  get elapsed(): number {
    return this.now - this.started;
  }

  /** Schedules `run` after `delayMs`; `broker`: work of the in-memory broker (settle waits for it). */
  schedule(delayMs: number, run: () => void, options: { broker?: boolean; every?: number } = {}): Task {
    const delay = Number.isFinite(delayMs) && delayMs > 0 ? delayMs : 0;
    const broker = options.broker ?? false;
    const owner = broker ? undefined : this.calls.getStore();
    const task = new Task(this, this.nextId++, this.now + delay, this.nextSeq++, run, broker, delay, options.every, owner);
    this.tasks.set(task.id, task);
    if (delay === 0) this.runSoon();
    return task;
  }

  /** Tasks due now (a delivery, a zero-delay timer) run by themselves on the next real turn; only time waits for `runUntil`. */
  private runSoon(): void {
    if (this.soon || !this.autoRun) return;
    this.soon = true;
    realSetImmediate(() => {
      this.soon = false;
      if (!this.autoRun) return;
      const task = this.next();
      if (task && task.due <= this.now) {
        this.runTask(task);
        this.runSoon();
      }
    });
  }

  /** Whether tasks due now run by themselves (see runSoon); off once the harness closes. */
  autoRun = true;
  private soon = false;

  /** Cancels `task`; one of another clock (a harness before this one) is only marked, never taken for this clock's task of its id. */
  cancel(task: Task | undefined): void {
    if (!task) return;
    task.cancelled = true;
    if (this.tasks.get(task.id) === task) this.tasks.delete(task.id);
  }

  /** A timer's `refresh()`: due its whole delay (or period) from now again, also after it fired, as in Node. */
  reschedule(task: Task): void {
    if (task.cancelled) return;
    task.due = this.now + (task.every ?? task.delay);
    task.seq = this.nextSeq++;
    this.tasks.set(task.id, task);
  }

  /** The earliest task (of the broker's own, or of the application's, when `broker` says which), or undefined when none waits. */
  next(broker?: boolean): Task | undefined {
    let first: Task | undefined;
    for (const task of this.tasks.values()) {
      if (broker !== undefined && task.broker !== broker) continue;
      if (!first || task.due < first.due || (task.due === first.due && task.seq < first.seq)) first = task;
    }
    return first;
  }

  /**
   * Runs `work` as code of this clock's: what it does, and everything it starts (its awaits, its timers, the I/O it
   * opens), sees the virtual time of `performance.now()`, `node:timers/promises` and `AbortSignal.timeout` while the
   * clock is installed. The clock's own tasks (timers, deliveries) run so too.
   */
  within<T>(work: () => T): T {
    return this.scope.run(this, work);
  }

  /** Whether the shared stand-ins answer the code running now with virtual time: installed, and code of this clock's. */
  private live(): boolean {
    return this.restore !== undefined && this.scope.getStore() === this;
  }

  /** Runs `deliver` (a delivery handed to its consumer) as a call of its own, open until `endCall`. */
  startCall(deliver: (call: HandlerCall) => void): HandlerCall {
    const call = new HandlerCall();
    this.openCalls.add(call);
    this.within(() => this.calls.run(call, () => deliver(call)));
    return call;
  }

  /** The delivery was answered (acknowledged, nacked, rejected, or its channel closed). */
  endCall(call: HandlerCall | undefined): void {
    if (call) this.openCalls.delete(call);
  }

  /**
   * The deliveries whose handlers wait for something real: open, and no referenced timer of their own waits on the
   * clock. A timer set outside every delivery (a module's refresher, `@nestjs/schedule`) is nobody's to await.
   */
  waitingForReal(): HandlerCall[] {
    const awaiting = new Set<HandlerCall>();
    for (const task of this.tasks.values()) if (task.owner && task.hasRef()) awaiting.add(task.owner);
    return [...this.openCalls].filter((call) => !awaiting.has(call));
  }

  /** How many tasks have run: it changes whenever anything on the clock moves. */
  ran = 0;

  /** How many tasks wait (the broker's own, or all). */
  pending(brokerOnly = false): number {
    return [...this.tasks.values()].filter((task) => !brokerOnly || task.broker).length;
  }

  /** Lets every pending promise settle: one turn of the real event loop. */
  async flush(): Promise<void> {
    await new Promise<void>((resolve) => realSetImmediate(resolve));
  }

  /** Runs every task due by `until` in time order, moving the clock to each, then to `until`; `maxTasks` stops a timer re-arming at no delay. */
  async runUntil(until: number, maxTasks = 1_000_000): Promise<number> {
    let ran = 0;
    await this.flush();
    for (;;) {
      const task = this.next();
      if (!task || task.due > until) break;
      if (++ran > maxTasks)
        throw new Error(`the virtual clock ran ${maxTasks} tasks without reaching its target: a timer re-arms itself at no delay?`);
      this.runTask(task);
      await this.flush();
    }
    if (until > this.now) this.now = until;
    await this.flush();
    return ran;
  }

  /** Runs one task now (the clock moves to its time first). */
  runTask(task: Task): void {
    this.tasks.delete(task.id);
    if (task.cancelled) return;
    this.ran++;
    if (task.due > this.now) this.now = task.due;
    if (task.every !== undefined) {
      task.due = this.now + Math.max(1, task.every);
      task.seq = this.nextSeq++;
      this.tasks.set(task.id, task);
    }
    // A timer runs in the context it was set in, as Node's do: what it sets in turn belongs to the same delivery.
    const owner = task.owner;
    this.within(() => (owner ? this.calls.run(owner, task.run) : this.calls.exit(task.run)));
  }

  /** Whether a clock stands in for the global timers of this process now (one installed, not yet uninstalled). */
  static installedOne(): boolean {
    return installedClock() !== undefined;
  }

  /** Whether this clock stands in for the global timers now (installed, and `setTimeout` not replaced since, e.g. by Jest's fake timers). */
  standsIn(): boolean {
    return installedClock() === this;
  }

  /**
   * Stands in for the global timers, Date, performance.now(), `node:timers/promises` and `AbortSignal.timeout` until
   * uninstall() (the shared ones for code of this clock's only, see within). Idempotent.
   */
  install(): void {
    if (this.restore) return;
    const g = globalThis as unknown as Record<string, unknown>;
    const names = ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'Date', 'queueMicrotask'];
    const perfs = [...new Set([performance, hooksPerformance])] as unknown as Record<string, unknown>[];
    const proc = process as unknown as Record<string, unknown>;
    // The module object CommonJS code reads at each call; syncBuiltinESMExports() carries it to ES modules' named imports.
    const promises = timersPromises as unknown as Record<string, unknown>;
    // The scheduler's methods live on its prototype: own properties on the instance stand in for them, and go again.
    const scheduler = promises.scheduler as Record<string, unknown> | undefined;
    const abortSignal = g.AbortSignal as Record<string, unknown>;
    // What every test file of the process shares (Jest's node environment hands each file the process's own).
    const shared = [
      ...perfs.map((perf) => [perf, 'now']),
      ...['setTimeout', 'setImmediate', 'setInterval'].map((name) => [promises, name]),
      ...(scheduler ? ['wait', 'yield'].map((name) => [scheduler, name]) : []),
      [abortSignal, 'timeout'],
    ] as Property[];
    const replaced = [...names.map((name) => [g, name]), [proc, 'nextTick'], ...shared] as Property[];
    // A stand-in found there (of a clock another test file left installed) says what it stood in for: that goes back.
    const stoodIn = (target: Record<string, unknown>, name: string): StoodIn => {
      const current = target[name] as ((...args: unknown[]) => unknown) & { [STANDS_IN]?: StoodIn };
      return current[STANDS_IN] ?? { original: current, descriptor: Object.getOwnPropertyDescriptor(target, name) };
    };
    const saved = replaced.map(([target, name]) => [target, name, stoodIn(target, name).descriptor] as const);
    const RealDate = (Object.getOwnPropertyDescriptor(g, 'Date')?.value as DateConstructor | undefined) ?? Date;
    const timer = (delay: unknown, fn: unknown, args: unknown[], repeat = false) => {
      if (typeof fn !== 'function') throw new TypeError('The "callback" argument must be of type function');
      const wait = timerDelay(delay);
      const run = () => (fn as (...a: unknown[]) => void)(...args);
      return this.schedule(wait, run, repeat ? { every: Math.max(1, wait) } : {});
    };
    // A handle that is no task of this clock (a timer set before install, Node's or Jest's) goes to the clear it came from.
    const clearOf = (name: string) => {
      const original = saved.find(([target, key]) => target === g && key === name)?.[2]?.value as ((handle: unknown) => void) | undefined;
      return (handle: TimerArg | object) => {
        const own =
          handle instanceof Task ? handle : typeof handle === 'number' || typeof handle === 'string' ? this.tasks.get(Number(handle)) : undefined;
        if (own) this.cancel(own);
        else if (handle !== null && handle !== undefined) original?.call(g, handle);
      };
    };
    const define = (target: Record<string, unknown>, name: string, value: unknown, enumerable = false) =>
      Object.defineProperty(target, name, { value, writable: true, configurable: true, enumerable });
    const virtualSetTimeout = (fn: unknown, delay?: unknown, ...args: unknown[]) => timer(delay, fn, args);
    define(g, 'setTimeout', Object.assign(virtualSetTimeout, { [INSTALLED]: this }));
    define(g, 'setInterval', (fn: unknown, delay?: unknown, ...args: unknown[]) => timer(delay, fn, args, true));
    define(g, 'setImmediate', (fn: unknown, ...args: unknown[]) => timer(0, fn, args));
    for (const name of ['clearTimeout', 'clearInterval', 'clearImmediate']) define(g, name, clearOf(name));
    define(g, 'Date', virtualDate(this, RealDate));
    // Microtasks stay real, also where Jest's fake timers had replaced them.
    define(g, 'queueMicrotask', (fn: () => void) => void Promise.resolve().then(fn));
    define(proc, 'nextTick', realNextTick);
    const virtual = promiseTimers<Task>(this);
    const now = () => this.perfBase + (this.now - this.started);
    const virtuals = { ...virtual, timeout: virtual.abortSignalTimeout, now } as unknown as Record<string, (...args: unknown[]) => unknown>;
    const live = () => this.live();
    // Code of another (a test file after the one that left this clock installed) gets Node's own, called as it was.
    for (const [target, name] of shared) {
      const was = stoodIn(target, name);
      const stands = virtuals[name];
      const standIn = function (this: unknown, ...args: unknown[]): unknown {
        return live() ? stands(...args) : was.original.apply(this, args);
      };
      define(target, name, Object.assign(standIn, { [STANDS_IN]: was }), target === promises);
    }
    syncBuiltinESMExports();
    const installed = replaced.map(([target, name]) => target[name]);
    // Only what is still this clock's goes back: what another stood in for since is left to it.
    this.restore = () => {
      for (const [i, [target, name, descriptor]] of saved.entries()) {
        if (target[name] !== installed[i]) continue;
        if (descriptor) Object.defineProperty(target, name, descriptor);
        else delete target[name];
      }
      syncBuiltinESMExports();
    };
  }

  /** Puts back what install() replaced; the clock's tasks stay (they run only when told). */
  uninstall(): void {
    this.restore?.();
    this.restore = undefined;
  }

  /** Drops every task. */
  clear(): void {
    for (const task of this.tasks.values()) task.cancelled = true;
    this.tasks.clear();
    this.openCalls.clear();
  }
}

/**
 * A `Date` whose `now()` and `new Date()` read the virtual clock; with arguments, the real one's. Constructed through
 * `Reflect.construct` with `new.target`, so that a subclass (`class Day extends Date`) gets instances of its own.
 */
function virtualDate(clock: VirtualClock, RealDate: DateConstructor): DateConstructor {
  function VirtualDate(this: unknown, ...args: unknown[]): Date | string {
    if (!new.target) return new RealDate(clock.now).toString();
    return Reflect.construct(RealDate, args.length === 0 ? [clock.now] : args, new.target) as Date;
  }
  VirtualDate.prototype = RealDate.prototype;
  VirtualDate.now = () => clock.now;
  VirtualDate.parse = RealDate.parse.bind(RealDate);
  VirtualDate.UTC = RealDate.UTC.bind(RealDate);
  return VirtualDate as unknown as DateConstructor;
}
