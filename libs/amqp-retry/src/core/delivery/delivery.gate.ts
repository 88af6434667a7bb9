/** A handler's place in the gate. */
export interface GatePass {
  /** The handler returned: its place is free. */
  leave(): void;
  /** The handler's delivery can no longer be settled (its channel died): it keeps its place, but does not block an exclusive one. */
  detach(): void;
}

/**
 * Admits handlers to run: up to `limit` at once, and an exclusive one only alone among attached handlers; in arrival
 * order, so an exclusive one is never starved. One gate lives across channels: handlers of a dead channel still count
 * toward `limit`, so a flapping connection cannot pile up more than `limit` handlers.
 */
export class DeliveryGate {
  private running = 0;
  private attached = 0;
  private exclusiveRunning = false;
  private readonly waiting: Array<{ exclusive: boolean; admit: (pass: GatePass) => void }> = [];

  constructor(private readonly limit: number) {}

  /** How many handlers run now. */
  get size(): number {
    return this.running;
  }

  /** A pass at once if the handler may run now (nobody waits before it), else undefined: then `enter()`. */
  tryEnter(exclusive: boolean): GatePass | undefined {
    if (this.waiting.length > 0 || !this.admissible(exclusive)) return undefined;
    return this.admitOne(exclusive);
  }

  /** Resolves when the handler may run. */
  enter(exclusive: boolean): Promise<GatePass> {
    return new Promise((resolve) => {
      this.waiting.push({ exclusive, admit: resolve });
      this.admit();
    });
  }

  /** A pass leaves (`running` false) or detaches: its place and its exclusivity are given back, once each. */
  release(pass: Pass, leaving: boolean): void {
    if (pass.attached) {
      pass.attached = false;
      this.attached--;
      if (pass.exclusive) this.exclusiveRunning = false;
    }
    if (leaving) {
      if (!pass.running) return;
      pass.running = false;
      this.running--;
    }
    this.admit();
  }

  private admissible(exclusive: boolean): boolean {
    return !this.exclusiveRunning && this.running < this.limit && !(exclusive && this.attached > 0);
  }

  private admitOne(exclusive: boolean): GatePass {
    this.running++;
    this.attached++;
    if (exclusive) this.exclusiveRunning = true;
    return new Pass(this, exclusive);
  }

  private admit(): void {
    for (let next = this.waiting[0]; next && this.admissible(next.exclusive); next = this.waiting[0]) {
      this.waiting.shift();
      next.admit(this.admitOne(next.exclusive));
    }
  }
}

/** One handler's pass: a class, not closures, since every delivery takes one. */
class Pass implements GatePass {
  attached = true;
  running = true;

  constructor(
    private readonly gate: DeliveryGate,
    readonly exclusive: boolean,
  ) {}

  leave(): void {
    if (this.running) this.gate.release(this, true);
  }

  detach(): void {
    if (this.attached) this.gate.release(this, false);
  }
}
