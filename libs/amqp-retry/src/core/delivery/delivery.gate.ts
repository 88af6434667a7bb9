/** A handler's place in the gate. */
export type GatePass = Pick<Pass, 'leave' | 'detach' | 'stepAside' | 'rejoin'>;

/** What the gate counts when it decides whether a handler may run. */
export interface GateCount {
  /** Handlers holding a place: running, waiting aside, or of a dead channel. */
  readonly running: number;
  readonly limit: number;
  /** Handlers running their work on a live channel: neither detached nor waiting aside. */
  readonly attached: number;
  /** An exclusive handler runs its work now. */
  readonly exclusiveRunning: boolean;
}

/**
 * Whether a handler may run its work now: never beside an exclusive one, an exclusive one only with no other attached
 * handler, and one that has no place yet (`placeHeld` false) only below the limit. A handler waiting aside (for its
 * ordering key's turn) or of a dead channel is not attached: it holds a place but runs nothing, so a suspect of a crash
 * runs beside it; otherwise a suspect behind a held key would wait out the hold, and every delivery after it with it.
 * @example mayRun({ running: 2, limit: 2, attached: 0, exclusiveRunning: false }, true, false) // false: no place free
 * @example mayRun({ running: 2, limit: 2, attached: 0, exclusiveRunning: false }, true, true) // true: its place, alone
 */
export function mayRun(count: GateCount, exclusive: boolean, placeHeld: boolean): boolean {
  if (count.exclusiveRunning) return false;
  if (!placeHeld && count.running >= count.limit) return false;
  return !(exclusive && count.attached > 0);
}

/**
 * Admits handlers to run: up to `limit` at once, and an exclusive one only alone among attached handlers; in arrival
 * order, so an exclusive one is never starved. One gate lives across channels: handlers of a dead channel still count
 * toward `limit`, so a flapping connection cannot pile up more than `limit` handlers. A handler that stepped aside and
 * rejoins goes before those that have not started: it holds its place already.
 */
export class DeliveryGate {
  private readonly count: { running: number; readonly limit: number; attached: number; exclusiveRunning: boolean };
  private readonly waiting: Array<{ exclusive: boolean; admit: (pass: GatePass) => void }> = [];
  private readonly rejoining: Array<{ pass: Pass; resume: () => void }> = [];

  constructor(limit: number) {
    this.count = { running: 0, limit, attached: 0, exclusiveRunning: false };
  }

  /** How many handlers run now. */
  get size(): number {
    return this.count.running;
  }

  /** A pass at once if the handler may run now (nobody waits before it), else undefined: then `enter()`. */
  tryEnter(exclusive: boolean): GatePass | undefined {
    if (this.waiting.length > 0 || this.rejoining.length > 0 || !mayRun(this.count, exclusive, false)) return undefined;
    return this.admitOne(exclusive);
  }

  /** Resolves when the handler may run. */
  enter(exclusive: boolean): Promise<GatePass> {
    return new Promise((resolve) => {
      this.waiting.push({ exclusive, admit: resolve });
      this.admit();
    });
  }

  /** A running pass leaves (`running` false) or detaches: its place and its exclusivity are given back, once each. */
  release(pass: Pass, leaving: boolean): void {
    this.unattach(pass);
    this.stopWaitingAside(pass);
    if (leaving) {
      pass.running = false;
      this.count.running--;
    }
    this.admit();
  }

  /** The pass waits aside: its exclusivity is given back, its place kept. */
  stepAside(pass: Pass): void {
    if (!pass.attached || !pass.running) return;
    this.unattach(pass);
    pass.aside = true;
    this.admit();
  }

  /** The pass goes on after waiting aside, at once if nothing waits before it and it may run, else in its turn. */
  rejoin(pass: Pass): Promise<void> | undefined {
    if (!pass.aside) return undefined;
    if (this.rejoining.length === 0 && mayRun(this.count, pass.exclusive, true)) return void this.attach(pass);
    return new Promise((resume) => this.rejoining.push({ pass, resume }));
  }

  private unattach(pass: Pass): void {
    if (!pass.attached) return;
    pass.attached = false;
    this.count.attached--;
    if (pass.exclusive) this.count.exclusiveRunning = false;
  }

  private attach(pass: Pass): void {
    pass.aside = false;
    pass.attached = true;
    this.count.attached++;
    if (pass.exclusive) this.count.exclusiveRunning = true;
  }

  /** A pass aside that leaves or detaches goes on unattached: a rejoin it waits for resolves. */
  private stopWaitingAside(pass: Pass): void {
    if (!pass.aside) return;
    pass.aside = false;
    const at = this.rejoining.findIndex((r) => r.pass === pass);
    if (at >= 0) this.rejoining.splice(at, 1)[0].resume();
  }

  private admitOne(exclusive: boolean): GatePass {
    this.count.running++;
    this.count.attached++;
    if (exclusive) this.count.exclusiveRunning = true;
    return new Pass(this, exclusive);
  }

  private admit(): void {
    for (let next = this.rejoining[0]; next && mayRun(this.count, next.pass.exclusive, true); next = this.rejoining[0]) {
      this.rejoining.shift();
      this.attach(next.pass);
      next.resume();
    }
    if (this.rejoining.length > 0) return;
    for (let next = this.waiting[0]; next && mayRun(this.count, next.exclusive, false); next = this.waiting[0]) {
      this.waiting.shift();
      next.admit(this.admitOne(next.exclusive));
    }
  }
}

/** One handler's pass: a class, not closures, since every delivery takes one. */
class Pass {
  attached = true;
  running = true;
  aside = false;

  constructor(
    private readonly gate: DeliveryGate,
    readonly exclusive: boolean,
  ) {}

  /** The handler returned: its place is free. */
  leave(): void {
    if (this.running) this.gate.release(this, true);
  }

  /** The handler's delivery can no longer be settled (its channel died): it keeps its place, but does not block an exclusive one. */
  detach(): void {
    if (this.attached || this.aside) this.gate.release(this, false);
  }

  /**
   * The handler waits for something other than its own work (its ordering key's turn): it keeps its place, but runs
   * nothing meanwhile, so it does not block an exclusive one (nor is it blocked by one) until `rejoin()`.
   */
  stepAside(): void {
    this.gate.stepAside(this);
  }

  /**
   * The handler goes on after `stepAside()`: resolves once the gate lets it run again (an exclusive one alone, none
   * beside an exclusive one), before any handler that has not started; undefined when it may go on at once.
   */
  rejoin(): Promise<void> | undefined {
    return this.gate.rejoin(this);
  }
}

/** Where a delivery's message keeps its handler's pass (see linkPass): on the message itself, nothing shared. */
const PASS = Symbol('gate pass');
type Passed = object & { [PASS]?: GatePass };

/** Gives a delivery's message its handler's pass, once the handler runs (a pass that has left ignores what waitAside asks). */
export function linkPass(message: object, pass: GatePass): void {
  Object.defineProperty(message, PASS, { value: pass, writable: true, configurable: true });
}

/**
 * Waits for `waiting` aside from the gate (GatePass.stepAside), when the message has a pass: a value, and the handler
 * goes on once the gate lets it run again; undefined (it gave up, and runs nothing) at once, the pass left aside.
 */
export async function waitAside<T>(message: object, waiting: Promise<T | undefined>): Promise<T | undefined> {
  const pass = (message as Passed)[PASS];
  if (pass === undefined) return waiting;
  pass.stepAside();
  const value = await waiting;
  if (value !== undefined) await pass.rejoin();
  return value;
}
