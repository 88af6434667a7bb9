/**
 * What the page asks before a replay or a purge and what it reports after: the confirm dialog's questions and the
 * status line's reports. No DOM here, so that jest tests it under Node.
 */
import type { ActionResult, Filter, MessageView, QueueState } from './api.types.js';
import type { GroupActionState, GroupState } from './groups.view.js';
import { plural } from './view.format.js';

/** What an action on parked messages did, as its report says it. */
export type Verb = 'Replayed' | 'Purged';

/** The report of a replay or a purge: how many of the matching, and the first few left parked (then in the error tone). */
export function reportText(verb: Verb, result: ActionResult): { text: string; kind: 'ok' | 'error' } {
  const done = verb === 'Purged' ? result.purged : result.replayed;
  let text = `${verb} ${done ?? 0} of ${result.matched} matching.`;
  const failed = result.failed ?? [];
  if (failed.length > 0)
    text += ` ${failed.length} left parked: ${failed
      .slice(0, 3)
      .map((f) => `${f.id} (${f.error})`)
      .join('; ')}`;
  return { text, kind: failed.length > 0 ? 'error' : 'ok' };
}

/** What the status line says while an action runs. */
export const workingText = (verb: Verb): string => (verb === 'Purged' ? 'Purging…' : 'Replaying…');

/** What the status line says when an action failed. */
export const failedText = (verb: Verb, message: string): string => `${verb === 'Purged' ? 'Purge' : 'Replay'} failed: ${message}`;

export const replayOneQuestion = (item: Pick<MessageView, 'queue'>): string =>
  `Replay this message to ${item.queue || 'its queue'} with fresh attempts?`;

export const PURGE_ONE_QUESTION = 'Purge this message? It is deleted for good.';

export const editedReplayQuestion = (item: Pick<MessageView, 'queue'>, body: string): string =>
  `Replay this message to ${item.queue || 'its queue'} with the corrected body (${body.length} characters)?`;

export const selectionQuestion = (verb: Verb, n: number): string =>
  verb === 'Replayed'
    ? `Replay ${plural(n, 'selected message')} with fresh attempts?`
    : `Purge ${plural(n, 'selected message')}? They are deleted for good.`;

/** The question for every message of a queue that matches the filter (`filter` as the API takes it, its queue included). */
export function filterQuestion(verb: Verb, total: number, queue: Pick<QueueState, 'queue' | 'errorQueue'>, filter: Filter): string {
  const what = `${plural(total, 'message')} parked in ${queue.errorQueue}${Object.keys(filter).length > 1 ? ' that match the filter' : ''}`;
  return verb === 'Replayed' ? `Replay all ${what} to ${queue.queue}?` : `Purge all ${what}? They are deleted for good.`;
}

/** The question for a failure group's action; `narrowed` when a filter narrowed the count (the action takes only those). */
export function groupQuestion(action: 'replay' | 'purge', group: Pick<GroupState, 'count' | 'error' | 'queue'>, narrowed = false): string {
  const what = `the ${plural(group.count, 'message')} of "${group.error}"${narrowed ? " that match the filter (the group's others stay parked)" : ''}`;
  return action === 'replay' ? `Replay ${what} to ${group.queue || 'their queue'}? Each returns once.` : `Purge ${what}? They are deleted for good.`;
}

export const groupWorkingText = (action: 'replay' | 'purge'): string => (action === 'replay' ? 'Replaying the group…' : 'Purging the group…');

export const groupDoneText = (action: 'replay' | 'purge', done: Pick<GroupActionState, 'done' | 'matched' | 'failed'>): string =>
  `${action === 'replay' ? 'Replayed' : 'Purged'} ${done.done} of ${done.matched} of the group${done.failed > 0 ? `; ${done.failed} left parked` : ''}.`;

/** An export's file name: the parking queue's name with anything but letters, digits and `._-` as `_`. */
export const exportFileName = (errorQueue: string): string => `${errorQueue.replace(/[^A-Za-z0-9._-]/g, '_')}.jsonl`;

/** How many messages an export holds: its non-empty lines. */
export const exportedCount = (text: string): number => text.split('\n').filter((line) => line !== '').length;
