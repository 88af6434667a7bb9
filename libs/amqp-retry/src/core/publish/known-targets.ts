/**
 * Targets a check found lately, each for `holdMs`: a delayed publish to one of them goes without asking the broker
 * again. Bounded: past `max` names, the expired ones go, then the oldest.
 */
export class KnownTargets {
  private readonly until = new Map<string, number>();

  constructor(
    private readonly holdMs: number,
    private readonly max = 1_000,
  ) {}

  /** Whether a check found `name` less than holdMs before `nowMs`. */
  has(name: string, nowMs: number): boolean {
    const until = this.until.get(name);
    if (until === undefined) return false;
    if (until > nowMs) return true;
    this.until.delete(name);
    return false;
  }

  /** A check found `name` at `nowMs`. */
  found(name: string, nowMs: number): void {
    this.until.delete(name); // set again below: the newest last, for the oldest to go first
    if (this.until.size >= this.max) {
      for (const [known, until] of this.until) if (until <= nowMs) this.until.delete(known);
      for (const known of this.until.keys()) {
        if (this.until.size < this.max) break;
        this.until.delete(known);
      }
    }
    this.until.set(name, nowMs + this.holdMs);
  }
}
