/**
 * Replays, purges and exports: one message, the selected ones, all that match the filter, a whole failure group.
 * Each is confirmed first, then the list is read again and the status line reports what was done.
 */
import type { ActionResult, Filter, MessageView } from './api.types.js';
import { api, apiText } from './api.client.js';
import { el } from './dom.helpers.js';
import type { GroupActionState, GroupState } from './groups.view.js';
import { filterForApi, groupActionBody, selectedQueue, selectionByQueue, type Page } from './page.state.js';
import { confirmAction, status } from './status.view.js';
import { query, plural } from './view.format.js';
import {
  editedReplayQuestion,
  exportedCount,
  exportFileName,
  failedText,
  filterQuestion,
  groupDoneText,
  groupQuestion,
  groupWorkingText,
  PURGE_ONE_QUESTION,
  replayOneQuestion,
  reportText,
  selectionQuestion,
  workingText,
  type Verb,
} from './actions.text.js';

function report(verb: Verb, result: ActionResult): void {
  const { text, kind } = reportText(verb, result);
  status(text, kind);
}

async function act(page: Page, path: string, body: unknown, verb: Verb, question: string): Promise<void> {
  if (!(await confirmAction(question))) return status('Cancelled.');
  status(workingText(verb));
  try {
    const result = await api<ActionResult>(path, body);
    page.state.selected.clear();
    await page.load();
    report(verb, result);
  } catch (error) {
    status(failedText(verb, (error as Error).message), 'error');
  }
}

export function replayOne(page: Page, item: MessageView): Promise<void> {
  return act(page, 'replay', { errorQueue: item.errorQueue, ids: [item.id] }, 'Replayed', replayOneQuestion(item));
}

export function purgeOne(page: Page, item: MessageView): Promise<void> {
  return act(page, 'purge', { errorQueue: item.errorQueue, ids: [item.id] }, 'Purged', PURGE_ONE_QUESTION);
}

/** Replays a message with the body the operator corrected. */
export function replayEdited(page: Page, item: MessageView, body: string): Promise<void> {
  return act(page, 'edit-and-replay', { errorQueue: item.errorQueue, id: item.id, body }, 'Replayed', editedReplayQuestion(item, body));
}

/** Replays or purges the selected messages, one request per parking queue, and reports their sum. */
export async function bySelection(page: Page, verb: Verb, path: string): Promise<void> {
  const { state } = page;
  const groups = selectionByQueue(state.selected);
  if (!(await confirmAction(selectionQuestion(verb, state.selected.size)))) return status('Cancelled.');
  const total: ActionResult & { replayed: number; purged: number; failed: { id: string; error: string }[] } = {
    matched: 0,
    replayed: 0,
    purged: 0,
    failed: [],
  };
  try {
    for (const [errorQueue, ids] of groups) {
      const r = await api<ActionResult>(path, { errorQueue, ids });
      total.matched += r.matched;
      total.replayed += r.replayed ?? 0;
      total.purged += r.purged ?? 0;
      total.failed.push(...(r.failed ?? []));
    }
    state.selected.clear();
    await page.load();
    report(verb, total);
  } catch (error) {
    status(`Failed: ${(error as Error).message}`, 'error');
    void page.load(true);
  }
}

/** Replays or purges every message of the chosen queue that matches the filter; nothing without one queue chosen. */
export function byFilter(page: Page, verb: Verb, path: string): Promise<void> | undefined {
  const q = selectedQueue(page.state);
  if (!q) return undefined;
  const filter = filterForApi(page.state.filter);
  // `expected`: the count the question shows; the server refuses (409) when another number matches by then.
  return act(page, path, { errorQueue: q.errorQueue, filter, expected: page.state.total }, verb, filterQuestion(verb, page.state.total, q, filter));
}

/** Downloads the chosen queue's matching messages as JSON lines; they stay parked. */
export async function exportFiltered(page: Page): Promise<void> {
  const q = selectedQueue(page.state);
  if (!q) return;
  status('Exporting…');
  try {
    const text = await apiText(`export${query({ errorQueue: q.errorQueue, ...filterForApi(page.state.filter) })}`);
    const count = exportedCount(text);
    const link = el('a', {
      href: URL.createObjectURL(new Blob([text], { type: 'application/x-ndjson' })),
      download: exportFileName(q.errorQueue),
    });
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
    status(`Exported ${plural(count, 'message')} from ${q.errorQueue} (left parked).`, 'ok');
  } catch (error) {
    status(`Export failed: ${(error as Error).message}`, 'error');
  }
}

/**
 * Replays or purges a failure group once confirmed: the messages its count showed, under the filter the groups were
 * read with (`counted`); the answer is recorded by the server and shown.
 */
export async function actOnGroup(page: Page, action: 'replay' | 'purge', group: GroupState, counted: Filter): Promise<void> {
  const body = groupActionBody(group, counted);
  if (!(await confirmAction(groupQuestion(action, group, 'filter' in body)))) return status('Cancelled.');
  status(groupWorkingText(action));
  try {
    const done = await api<GroupActionState>(`groups/${action}`, body);
    await page.load(true);
    status(groupDoneText(action, done));
  } catch (error) {
    status(`The group ${action} failed: ${(error as Error).message}`, 'error');
  }
}
