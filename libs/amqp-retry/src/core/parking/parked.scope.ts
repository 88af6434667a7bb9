import { HANDLER_REGISTRY_QUEUE, type HandlerRecord } from '../topology/handler-registry.record.js';

/** A handler queue, where it parks, and its tiers. */
export type ScopeQueue = Pick<HandlerRecord, 'queue' | 'errorQueue' | 'tiers'>;

/**
 * Which handler queues a parked-messages view may see and act on: only what it was given, unless it asks for the whole
 * vhost, so that one application's page cannot replay or purge another's parked messages.
 */
export interface ParkedScope {
  /** The queues of the application the view belongs to (its engine's handlers and delay ladder), authoritative. */
  own?: readonly ScopeQueue[];
  /** Handler queues named by the caller; a parking queue given overrides the recorded one. */
  named: readonly { queue: string; errorQueue?: string }[];
  /** Applications whose recorded queues are in scope (HandlerRecord.applications). */
  applications: readonly string[];
  /** Every handler queue recorded on the vhost, and any parking queue named. */
  wholeVhost: boolean;
}

/** True when the scope names nothing at all. */
export const namesNothing = (scope: ParkedScope): boolean =>
  scope.own === undefined && scope.named.length === 0 && scope.applications.length === 0 && !scope.wholeVhost;

/**
 * The handler queues in scope, sorted by name, each once: the view's own (as its engine runs them), then the recorded
 * ones of the named applications (or of every application, for the whole vhost), then the named ones (their parking
 * queue as given, else as recorded, else `<queue>.error`). `records` are the newest of each queue (latestRecords).
 */
export function queuesInScope(scope: ParkedScope, records: readonly HandlerRecord[]): ScopeQueue[] {
  const byQueue = new Map<string, ScopeQueue>();
  const recorded = new Map(records.map((record) => [record.queue, record]));
  for (const record of records) {
    if (scope.wholeVhost || record.applications.some((name) => scope.applications.includes(name))) {
      byQueue.set(record.queue, { queue: record.queue, errorQueue: record.errorQueue, tiers: record.tiers });
    }
  }
  for (const { queue, errorQueue } of scope.named) {
    const known = byQueue.get(queue) ?? recorded.get(queue);
    byQueue.set(queue, { queue, errorQueue: errorQueue ?? known?.errorQueue ?? `${queue}.error`, tiers: known?.tiers ?? [] });
  }
  for (const own of scope.own ?? []) byQueue.set(own.queue, { queue: own.queue, errorQueue: own.errorQueue, tiers: [...own.tiers] });
  return [...byQueue.values()].sort((a, b) => a.queue.localeCompare(b.queue));
}

/** The parking queue of a handler queue in scope, else (whole vhost only) `<queue>.error`, else undefined. */
export function parkingQueueOf(scope: ParkedScope, inScope: readonly ScopeQueue[], queue: string): string | undefined {
  const found = inScope.find((q) => q.queue === queue);
  if (found) return found.errorQueue;
  return scope.wholeVhost ? `${queue}.error` : undefined;
}

/**
 * The handler queue a message parked without `x-original-queue` (by an older version) failed in, from where it is
 * parked. The queues that park in `errorQueue` are those `parkers` say (the records and the application's own queues),
 * else, when none does, those the scope names (`inScope`); the message is the one such queue's, else '' (unknown):
 * when two queues park there, which one it failed in cannot be told, and a replay must not guess. Its list, count,
 * replay, purge and export all read it as that queue's.
 */
export function queueOfUnnamed(
  errorQueue: string,
  parkers: readonly Pick<ScopeQueue, 'queue' | 'errorQueue'>[],
  inScope: readonly Pick<ScopeQueue, 'queue' | 'errorQueue'>[],
): string {
  const parkingThere = (queues: readonly Pick<ScopeQueue, 'queue' | 'errorQueue'>[]) =>
    new Set(queues.filter((q) => q.errorQueue === errorQueue).map((q) => q.queue));
  const recorded = parkingThere(parkers);
  const owners = recorded.size > 0 ? recorded : parkingThere(inScope);
  return owners.size === 1 ? [...owners][0] : '';
}

/** Whether a parking queue may be read or changed: one of a queue in scope, or any named one when the scope is the whole vhost. */
export const mayUseParkingQueue = (scope: ParkedScope, inScope: readonly ScopeQueue[], errorQueue: string): boolean =>
  scope.wholeVhost || inScope.some((q) => q.errorQueue === errorQueue);

/**
 * The library's own queues that are never parking queues, by name alone: a record of one of them may be missing (its
 * application gone, the registry purged) while the queue still holds what the library needs.
 */
const LIBRARY_QUEUE_NAMES: readonly { pattern: RegExp; role: string }[] = [
  { pattern: /\.v\d+\.p\d{2}\.\d+ms$/, role: 'a queue of a delay ladder (<prefix>.v<n>.p<position>.<ttl>ms)' },
  { pattern: /\.retry\.plan$/, role: "a handler's retry plan record (<queue>.retry.plan)" },
  { pattern: /\.retry\.live\./, role: "a handler's presence queue (<queue>.retry.live.<schedule>)" },
  { pattern: /\.retry\.\d+\.[^.]+\.[0-9a-f]{6}$/, role: 'a retry tier (<queue>.retry.<position>.<delay>.<schedule>)' },
  { pattern: /\.dlx\.dead$/, role: "a handler's dead-letter queue (<queue>.dlx.dead)" },
];

/** The names the retry topology of a handler queue derives beside its tiers (and its tiers: `<queue>.retry.…`). */
const derivesFrom = (queue: string, name: string): boolean =>
  [`${queue}.return`, `${queue}.dlx`].includes(name) || [`${queue}.dlx.`, `${queue}.retry.`].some((part) => name.startsWith(part));

/**
 * A registry record in words, with what to do when it is wrong, for an error that refuses a queue because of it: its
 * queue, applications and time; a record whose queue no handler runs was not written by a start.
 */
const describeRecord = ({ queue, applications, recordedAt }: HandlerRecord): string => {
  const by = applications.length > 0 ? `application(s) ${applications.map((a) => JSON.stringify(a)).join(', ')}` : 'no application named';
  return (
    `the record of ${JSON.stringify(queue)} in "${HANDLER_REGISTRY_QUEUE}" (${by}, recorded ${recordedAt || 'at an unknown time'}; ` +
    `if no handler runs on ${JSON.stringify(queue)}, no start wrote it: take it out of the registry, or use the ParkedMessages or page of ` +
    `the application that parks there, whose own handlers a record cannot override)`
  );
};

/**
 * Why `name` can never be a parking queue, or undefined: the handler registry; a queue the application's own handlers
 * (`own`, authoritative) consume or retry through (a queue, a tier, a name its retry topology derives); a handler queue
 * of a record, or a name its retry topology derives; a queue of the library by its name (LIBRARY_QUEUE_NAMES).
 * A parking queue of `own` is one whatever a record says, and a record's `tiers` count only as far as the record's own
 * queue derives them: anyone who may publish to the default exchange can write a record, which must not take another
 * application's parking queue from it. A refusal because of a record names the record.
 */
export function nonParkingRole(own: readonly ScopeQueue[], records: readonly HandlerRecord[], name: string): string | undefined {
  if (name === HANDLER_REGISTRY_QUEUE) return 'the handler registry';
  if (own.some((q) => q.queue === name || q.tiers.includes(name))) return 'a handler queue or one of its retry tiers';
  const derived = own.find(({ queue }) => derivesFrom(queue, name));
  if (derived) return `a name the retry topology of "${derived.queue}" derives`;
  const record = own.some((q) => q.errorQueue === name) ? undefined : records.find(({ queue }) => queue === name || derivesFrom(queue, name));
  if (record)
    return `${record.queue === name ? 'the handler queue' : `a name the retry topology of "${record.queue}" derives`} by ${describeRecord(record)}`;
  return LIBRARY_QUEUE_NAMES.find(({ pattern }) => pattern.test(name))?.role;
}

/**
 * Why a replay may not publish a copy to `target` (the queue a parked message names), or undefined. A replay goes to a
 * handler queue in the view's scope only (`inScope`: the application's own queues, those of the applications or
 * queues named, every recorded one for the whole vhost), never to a queue of the library: the handler registry, a
 * server-named queue (`amq.…`, such as an instance's control queue), a parking queue, a retry tier, a name a handler
 * queue's retry topology derives, a queue LIBRARY_QUEUE_NAMES names. Anyone who may publish to a parking queue can
 * write `x-original-queue`: a copy must not reach a queue the view does not look after. The application's own handler
 * queues (`own`) are targets whatever a record says.
 */
export function replayTargetProblem(
  target: string,
  { own, records, inScope }: { own: readonly ScopeQueue[]; records: readonly HandlerRecord[]; inScope: readonly ScopeQueue[] },
): string | undefined {
  if (own.some((q) => q.queue === target)) return undefined;
  const handlers = [...own, ...records, ...inScope];
  const internal =
    target === HANDLER_REGISTRY_QUEUE
      ? 'the handler registry'
      : target.startsWith('amq.')
        ? 'a queue the broker named (amq.…)'
        : handlers.some((q) => q.errorQueue === target)
          ? 'a parking queue'
          : own.some((q) => q.tiers.includes(target)) || handlers.some(({ queue }) => derivesFrom(queue, target))
            ? 'a retry tier or a name the retry topology of a handler queue derives'
            : LIBRARY_QUEUE_NAMES.find(({ pattern }) => pattern.test(target))?.role;
  if (internal !== undefined)
    return `its queue ${JSON.stringify(target)} (x-original-queue) is ${internal}, not a handler queue; no replay goes there`;
  if (!inScope.some((q) => q.queue === target))
    return `its queue ${JSON.stringify(target)} (x-original-queue) is not a handler queue this view looks after; no replay goes there (should it be one whose record is gone, name it as the handler queue: the CLI's --queue)`;
  return undefined;
}

/** Whether some handler (by `queues`: the records, the application's own, those in scope) parks in `name`. */
export const isRecordedParkingQueue = (queues: readonly Pick<ScopeQueue, 'errorQueue'>[], name: string): boolean =>
  queues.some((q) => q.errorQueue === name);

/** The scope in words, for an error that says what the view looks at. */
export function describeScope(scope: ParkedScope): string {
  if (scope.wholeVhost) return 'every handler queue recorded on the vhost';
  const parts: string[] = [];
  if (scope.own !== undefined) parts.push("this application's handler queues");
  if (scope.applications.length > 0) parts.push(`the queues recorded by ${scope.applications.map((a) => `"${a}"`).join(', ')}`);
  if (scope.named.length > 0) parts.push(`the queues named: ${scope.named.map((n) => `"${n.queue}"`).join(', ')}`);
  return parts.length > 0 ? parts.join('; ') : 'nothing (no queue, application or wholeVhost given)';
}
