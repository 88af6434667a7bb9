import type { HandlerRecord } from '../../topology/handler-registry.record.js';

/** How often, at most, the registry is read for a queue the page does not know. */
export const RECORDED_READ_SPACING_MS = 5_000;
/** How long a queue that a read did not find is taken as unknown before a beat naming it asks again. */
export const UNKNOWN_QUEUE_MS = 60_000;
/** Unknown queues remembered at most (a beat names at most 64 queues; more than this many names is a flood). */
export const MAX_UNKNOWN_QUEUES = 1_000;

/**
 * The queues of an application as the handler registry records them: which beats' queues the page counts. Pure: the
 * page reads the registry when `wantsRead` says so and hands the records to `learn`. A partition queue (`orders.p3`)
 * makes its handler (`orders`) known; what was learned stays (a lost record drops no counts); a queue not found is not
 * asked about again for UNKNOWN_QUEUE_MS.
 */
export class RecordedScope {
  private readonly known = new Set<string>();
  private readonly unknown = new Map<string, number>();
  private lastReadAt = -Infinity;

  constructor(private readonly application: string) {}

  has(queue: string): boolean {
    return this.known.has(queue);
  }

  /** Whether a beat naming `queue`, unknown, should have the registry read now (at `now`). */
  wantsRead(queue: string | undefined, now: number): boolean {
    if (now - this.lastReadAt < RECORDED_READ_SPACING_MS) return false;
    if (queue === undefined) return true;
    const since = this.unknown.get(queue);
    return since === undefined || now - since >= UNKNOWN_QUEUE_MS;
  }

  /** A read begins at `now`: the next one waits its spacing, whatever it returns. */
  reading(now: number): void {
    this.lastReadAt = now;
  }

  /** The records a read returned; `asked`, the queue it was read for, is remembered as unknown if none records it. */
  learn(records: readonly HandlerRecord[], asked: string | undefined, now: number): void {
    for (const record of records) {
      if (!record.applications.includes(this.application)) continue;
      this.known.add(record.queue);
      const partitioned = /^(.+)\.p\d+$/.exec(record.queue)?.[1];
      if (partitioned !== undefined) this.known.add(partitioned);
    }
    if (asked === undefined || this.known.has(asked)) return;
    if (this.unknown.size >= MAX_UNKNOWN_QUEUES) this.unknown.clear();
    this.unknown.set(asked, now);
  }
}
