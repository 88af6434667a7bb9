/** Sets `key` as the newest entry of `map`, forgetting the oldest beyond `capacity`. */
export function keepNewest<K, V>(map: Map<K, V>, key: K, value: V, capacity: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > capacity) map.delete(map.keys().next().value as K);
}

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
    if (this.until.size >= this.max) for (const [known, until] of this.until) if (until <= nowMs) this.until.delete(known);
    keepNewest(this.until, name, nowMs + this.holdMs, this.max); // the newest last, for the oldest to go first
  }
}
