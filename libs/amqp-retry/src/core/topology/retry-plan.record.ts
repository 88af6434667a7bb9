import { readRecordFields } from './json-record.reader.js';
import { tierPositionOf } from './retry-topology.plan.js';

/**
 * What a start leaves in the handler's plan queue (`Q.retry.plan`): the tier queues of the newest start (its first
 * tier takes first failures), the schedules of other versions of the handler that were still running then (a rolling
 * deploy), and tiers of schedules no longer running that were not deleted yet because they still held messages.
 */
export interface RetryPlanRecord {
  tiers: string[];
  /** Each a schedule's tier list, tier 1 first. */
  others: string[][];
  retiring: string[];
}

const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.every((v) => typeof v === 'string');

/** Reads a plan record defensively (also the older `{tiers, retiring}` form); anything unreadable counts as no record. */
export function readPlanRecord(content: Buffer | undefined): RetryPlanRecord | undefined {
  if (!content) return undefined;
  const { tiers, retiring, others } = readRecordFields(content);
  if (!isStringArray(tiers)) return undefined;
  return {
    tiers,
    others: Array.isArray(others) ? others.filter((o): o is string[] => isStringArray(o) && o.length > 0) : [],
    retiring: isStringArray(retiring) ? retiring : [],
  };
}

/** The plan records a start may act on, and what it ignored. */
export interface ScreenedPlanRecords {
  records: RetryPlanRecord[];
  /** How many records were ignored. */
  ignored: number;
  /** The names in the ignored records that are no tier of the queue where they stand, each once. */
  refused: string[];
}

/**
 * The records of `queue`'s plan queue a start may act on: those whose every name is a tier of `queue` by the naming of
 * tierQueues, each schedule's tier k at position k, and none of `reserved` (the queue's parking and dead-letter queues).
 * Anyone allowed to publish to the default exchange can put a record in the plan queue, and a start deletes the empty
 * tiers a record names: a record naming anything else was not written by a start, so it is ignored whole.
 */
export function screenPlanRecords(records: readonly RetryPlanRecord[], queue: string, reserved: readonly string[]): ScreenedPlanRecords {
  const isTier = (name: string, position?: number) => {
    const at = tierPositionOf(queue, name);
    return at !== undefined && (position === undefined || at === position) && !reserved.includes(name);
  };
  const refusedOf = (record: RetryPlanRecord) => [
    ...[record.tiers, ...record.others].flatMap((schedule) => schedule.filter((name, i) => !isTier(name, i + 1))),
    ...record.retiring.filter((name) => !isTier(name)),
  ];
  const kept: RetryPlanRecord[] = [];
  const refused = new Set<string>();
  let ignored = 0;
  for (const record of records) {
    const bad = refusedOf(record);
    if (bad.length === 0 && record.tiers.length > 0) {
      kept.push(record); // a start always records a first tier
    } else {
      ignored++;
      for (const name of bad) refused.add(name);
    }
  }
  return { records: kept, ignored, refused: [...refused] };
}

/** A schedule's id: the digest that ends its first tier's name (`Q.retry.1.<delay>.<id>`, see tierQueues). */
export const scheduleIdOf = (tiers: readonly string[]): string => (tiers[0] ?? '').slice((tiers[0] ?? '').lastIndexOf('.') + 1);

/** The schedules the records name besides `own`, each once, to check whether a version still runs them. */
export function otherSchedules(records: readonly RetryPlanRecord[], own: readonly string[]): string[][] {
  const ownId = scheduleIdOf(own);
  const byId = new Map<string, string[]>();
  for (const schedule of records.flatMap((r) => [r.tiers, ...r.others])) {
    const id = scheduleIdOf(schedule);
    if (schedule.length > 0 && id !== ownId && !byId.has(id)) byId.set(id, schedule);
  }
  return [...byId.values()];
}

/** What a start does with the tiers of other schedules. */
export interface RetirementPlan {
  /** First tiers to cut off the first-failure exchange before binding our own: the newest start takes first failures. */
  unbindFirst: string[];
  /** Schedules another running version still uses: left alone, their messages keep their schedule. */
  keep: string[][];
  /** Tiers of schedules nobody runs: cut off the dead-letter exchange, then deleted once empty. */
  retire: string[];
}

/**
 * Plans a start's retirement of other schedules' tiers. Only tiers of schedules that no running instance uses (`live`
 * says which do, by schedule id) are retired, so two versions side by side never delete each other's tiers; first
 * failures go to the newest start's first tier, and only to it (never two first tiers bound at once).
 */
export function planRetirement(records: readonly RetryPlanRecord[], own: readonly string[], live: ReadonlySet<string>): RetirementPlan {
  const mine = new Set(own);
  const others = otherSchedules(records, own);
  const keep = others.filter((schedule) => live.has(scheduleIdOf(schedule)));
  const kept = new Set(keep.flat());
  const dead = others.filter((schedule) => !live.has(scheduleIdOf(schedule))).flat();
  const retire = [...new Set([...dead, ...records.flatMap((r) => r.retiring)])].filter((name) => !mine.has(name) && !kept.has(name));
  return { unbindFirst: others.map((schedule) => schedule[0]).filter((name) => !mine.has(name)), keep, retire };
}
