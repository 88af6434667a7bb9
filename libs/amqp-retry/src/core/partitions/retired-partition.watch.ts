import type { PartitionMember } from './partition.plan.js';

/** How often at most the deleted retired partitions are looked for again (a passive check each). */
export const RETIRED_LOOK_MS = 5_000;

/** Most deleted retired partitions one look checks; the others wait for the next look, in turn. */
export const RETIRED_LOOKS_AT_ONCE = 16;

/**
 * Whether some member heard may declare partition `index` again: one that runs it (its count is above it) or one that
 * did not say its count. Such an instance declares its partition queues, and binds them to the hash exchange, when it
 * starts, reconnects, or finds one deleted.
 */
export const mayDeclarePartition = (index: number, members: readonly PartitionMember[]): boolean =>
  members.some((m) => m.count === undefined || index < m.count);

/**
 * The retired partitions (beyond this instance's count) whose queue was deleted while their mover ran, and when to look
 * for them again: an instance of a larger count may declare one again, bound to the hash exchange, and leave it with no
 * consumer when it stops. Fed the members heard each heartbeat, it answers which to look for now: those that some
 * member heard since the last look may declare (one that left meanwhile may have declared it just before), at most
 * RETIRED_LOOKS_AT_ONCE at a time, every `everyMs` at most. While nobody heard runs them, none is looked for.
 */
export class RetiredPartitionWatch {
  private readonly deleted = new Set<number>();
  /** The deleted ones to look for at the next look, in the order they became due (those left over by a look first). */
  private readonly due = new Set<number>();
  private lookedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly everyMs = RETIRED_LOOK_MS,
    private readonly atOnce = RETIRED_LOOKS_AT_ONCE,
  ) {}

  /** How many deleted retired partitions it watches. */
  get size(): number {
    return this.deleted.size;
  }

  /** Partition `index`'s queue was found deleted: it is looked for from now on. */
  lost(index: number): void {
    this.deleted.add(index);
  }

  /** Partition `index`'s queue is there again (its mover runs again): no longer looked for. */
  found(index: number): void {
    this.deleted.delete(index);
    this.due.delete(index);
  }

  /** A look at partition `index` could not tell (the connection failed): it is looked for at the next look. */
  unsure(index: number): void {
    if (this.deleted.has(index)) this.due.add(index);
  }

  /** The members heard now (each heartbeat): the deleted partitions to look for now, none unless a look is due. */
  heard(members: readonly PartitionMember[], now: number): number[] {
    for (const index of this.deleted) if (!this.due.has(index) && mayDeclarePartition(index, members)) this.due.add(index);
    if (this.due.size === 0 || now - this.lookedAt < this.everyMs) return [];
    this.lookedAt = now;
    const look = [...this.due].slice(0, this.atOnce);
    for (const index of look) this.due.delete(index);
    return look;
  }
}
