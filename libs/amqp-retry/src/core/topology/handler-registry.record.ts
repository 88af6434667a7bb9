import { readRecordFields } from './json-record.reader.js';

/**
 * The handler registry: a durable queue on the broker (HANDLER_REGISTRY_QUEUE) that holds one JSON record per handler
 * queue, written by each handler's start. AMQP cannot list queues, so this is how tools that do not boot the
 * application (the `amqp-retry` CLI) find the parking queues.
 */
export const HANDLER_REGISTRY_QUEUE = 'amqp-retry.handlers';

/**
 * An exclusive queue held while the registry is read (a read takes every record unacked, so a second reader would see
 * none): the broker refuses it to a second connection (405 RESOURCE_LOCKED) and deletes it with its connection, so a
 * crash cannot leave the lock behind.
 */
export const HANDLER_REGISTRY_LOCK = 'amqp-retry.handlers.lock';

/** How long a registry reader waits for another's read to finish before it reads anyway. */
export const REGISTRY_LOCK_WAIT_MS = 5_000;

/** The pause between two tries to take the registry's lock: a read takes a few milliseconds. */
export const REGISTRY_LOCK_RETRY_MS = 25;

/** Whether a declare of the lock failed because another connection holds it (405 RESOURCE_LOCKED). */
export const isHeldElsewhere = (error: unknown): boolean =>
  typeof error === 'object' &&
  error !== null &&
  ((error as { code?: unknown }).code === 405 || /RESOURCE_LOCKED/.test(String((error as Error).message)));

export interface HandlerRecord {
  queue: string;
  errorQueue: string;
  /** The tier queues of the newest start, tier 1 first. */
  tiers: string[];
  queueType: 'classic' | 'quorum';
  /** The applications (RetryModule option `application`) whose starts recorded the queue (several for a shared ladder), newest first. */
  applications: string[];
  /** ISO time of the start that wrote it. */
  recordedAt: string;
}

/** Application names a record keeps: enough for the applications sharing a ladder, bounded against a flood of names. */
export const MAX_RECORDED_APPLICATIONS = 16;

const isString = (value: unknown): value is string => typeof value === 'string' && value.length > 0;

/** Reads one record defensively; anything unreadable (not JSON, a field missing) is undefined. */
export function readHandlerRecord(content: Buffer): HandlerRecord | undefined {
  const { queue, errorQueue, tiers, queueType, applications, recordedAt } = readRecordFields(content);
  if (!isString(queue) || !isString(errorQueue)) return undefined;
  return {
    queue,
    errorQueue,
    tiers: Array.isArray(tiers) ? tiers.filter(isString) : [],
    queueType: queueType === 'quorum' ? 'quorum' : 'classic',
    applications: Array.isArray(applications) ? [...new Set(applications.filter(isString))].slice(0, MAX_RECORDED_APPLICATIONS) : [],
    recordedAt: isString(recordedAt) ? recordedAt : '',
  };
}

/** The newest record of each handler queue (records are read oldest first), sorted by queue name. */
export function latestRecords(records: readonly HandlerRecord[]): HandlerRecord[] {
  const byQueue = new Map<string, HandlerRecord>();
  for (const record of records) byQueue.set(record.queue, record);
  return [...byQueue.values()].sort((a, b) => a.queue.localeCompare(b.queue));
}

/** The records (by position) a start that wrote a new record for `queue` may remove: the older ones of that queue, and unreadable ones. */
export function supersededRecords(contents: readonly (HandlerRecord | undefined)[], queue: string): number[] {
  return contents.flatMap((record, index) => (record === undefined || record.queue === queue ? [index] : []));
}

/** Records of other queues a start checks for deletion, oldest first: a bounded cost per start. */
export const PRUNE_CHECKS_PER_START = 10;

/**
 * Which records (by position) a start checks: those of other queues, the oldest `max`. A record whose handler queue and
 * parking queue are both gone is removed (one deleted for a moment is recorded again by its next start).
 */
export function pruneCandidates(contents: readonly (HandlerRecord | undefined)[], queue: string, max = PRUNE_CHECKS_PER_START): number[] {
  return contents.flatMap((record, index) => (record !== undefined && record.queue !== queue ? [index] : [])).slice(0, max);
}

/**
 * The applications a new record of `queue` names: `mine` (if any) first, then those of its earlier records, newest
 * first, each once: a queue several applications share stays known to each, whichever started last.
 */
export function recordedApplications(contents: readonly (HandlerRecord | undefined)[], queue: string, mine: string | undefined): string[] {
  const earlier = contents.flatMap((record) => (record?.queue === queue ? [record.applications] : [])).reverse();
  return [...new Set([...(mine === undefined ? [] : [mine]), ...earlier.flat()])].slice(0, MAX_RECORDED_APPLICATIONS);
}
