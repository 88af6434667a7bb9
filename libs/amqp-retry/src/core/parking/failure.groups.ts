import type { FailureGroup, ParkedMessageView } from './parked-messages.types.js';
import { ParkedHeader } from '../headers/header.names.js';
import { fnv1a } from '../text/fnv.hash.js';

/** Most failure groups a summary lists (the largest); the others are counted in the total only. */
export const MAX_FAILURE_GROUPS = 200;

/**
 * An exception message with what varies between messages of one failure masked (ids, e-mail and IP addresses,
 * numbers), so that "connect ECONNREFUSED 10.0.0.7:443 for order 8812" and "... 10.0.0.9:443 for order 8813" read alike.
 */
export function normalizeError(message: string): string {
  return message
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>')
    .replace(/[\w.+-]+@[\w-]+(\.[\w-]+)+/g, '<email>')
    .replace(/\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b/g, '<ip>')
    .replace(/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b/gi, '<id>')
    .replace(/\d+(\.\d+)?/g, '<n>')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 300);
}

/** The first frame of a stack trace ("at PaymentsClient.charge (payments.client.ts:<n>:<n>)"), lines masked; '' without one. */
export function topFrame(stack: unknown): string {
  if (typeof stack !== 'string') return '';
  const frame = stack.split('\n').find((line) => /^\s*at\s/.test(line));
  if (!frame) return '';
  return frame
    .trim()
    .replace(/:\d+(:\d+)?\)?$/, (m) => (m.endsWith(')') ? ':<n>)' : ':<n>'))
    .slice(0, 200);
}

/**
 * A short, stable key of a group, for a filter naming it in a URL or a request: 64 bits as two FNV-1a hashes of its
 * parts with different bases, so that two groups of one summary never share a key in practice.
 */
export function groupKeyOf(view: ParkedMessageView): string {
  const parts = `${view.errorQueue}\u0000${view.queue}\u0000${view.reason}\u0000${normalizeError(view.error)}\u0000${topFrame(view.headers[ParkedHeader.exceptionStack])}`;
  return fnv1a(parts, 0x811c9dc5) + fnv1a(parts, 0x050c5d1f);
}

/**
 * Most groups a tally keeps while it counts (50 times what a summary lists): a parking queue whose every message failed
 * differently (an error naming what no mask catches) would otherwise hold one group per message.
 */
export const MAX_TRACKED_GROUPS = 10_000;

/**
 * Failure groups counted one message at a time: memory by group, not by message, at most `limit` groups. Past it, a
 * message of a group not kept yet is counted as `ungrouped` only (as groups past MAX_FAILURE_GROUPS, it is in the
 * summary's total and in no group); the groups kept go on counting, so that below the limit nothing changes.
 */
export class FailureGroupTally {
  private readonly groups = new Map<string, FailureGroup>();
  private others = 0;

  constructor(private readonly limit = MAX_TRACKED_GROUPS) {}

  /** Messages of groups met once the limit was reached. */
  get ungrouped(): number {
    return this.others;
  }

  add(view: ParkedMessageView): void {
    const key = groupKeyOf(view);
    let group = this.groups.get(key);
    if (!group) {
      if (this.groups.size >= this.limit) {
        this.others++;
        return;
      }
      group = {
        key,
        queue: view.queue,
        errorQueue: view.errorQueue,
        reason: view.reason,
        error: normalizeError(view.error),
        frame: topFrame(view.headers[ParkedHeader.exceptionStack]),
        count: 0,
        sample: { id: view.id, error: view.error },
      };
      this.groups.set(key, group);
    }
    group.count++;
    if (view.parkedAt) {
      if (!group.firstSeen || view.parkedAt < group.firstSeen) group.firstSeen = view.parkedAt;
      if (!group.lastSeen || view.parkedAt > group.lastSeen) group.lastSeen = view.parkedAt;
    }
  }

  /** The groups, the largest first, at most MAX_FAILURE_GROUPS. */
  largest(): FailureGroup[] {
    return [...this.groups.values()].sort((a, b) => b.count - a.count || a.key.localeCompare(b.key)).slice(0, MAX_FAILURE_GROUPS);
  }
}
