/**
 * Failure groups as units of work (replay or purge a whole group, recorded), their history, the search by message id
 * or correlation id, and a parked message's timeline from its death history.
 */
import type { FailureGroup, ParkedMessageView } from '../../../core/parking/parked-messages.types.js';
import { clear, el, nameNode } from './dom.helpers.js';
import { shortTier } from './view.format.js';
import { clock } from './console.view.js';

/** A failure group as JSON brings it (dates as ISO strings). */
export type GroupState = Omit<FailureGroup, 'firstSeen' | 'lastSeen'> & { firstSeen?: string; lastSeen?: string };
/** One group action as `api/groups/actions` lists it. */
export interface GroupActionState {
  at: string;
  by: string;
  action: 'replay' | 'purge';
  group: string;
  errorQueue: string;
  error: string;
  matched: number;
  done: number;
  failed: number;
}

const when = (iso?: string) => (iso ? `${new Date(iso).toLocaleDateString()} ${clock(Date.parse(iso))}` : '–');

/** The groups, each with its count, first and last seen, a sample, and its Replay group and Purge group buttons. */
export function renderFailureGroups(list: HTMLElement, groups: readonly GroupState[], act: (action: 'replay' | 'purge', group: GroupState) => void, show: (group: GroupState) => void): void {
  clear(list);
  if (groups.length === 0) list.appendChild(el('li', { className: 'empty', text: 'No failure group.' }));
  for (const g of groups) {
    list.appendChild(
      el('li', { className: 'failure-group', 'data-failure-group': g.key }, [
        el('div', { className: 'fg-head' }, [
          el('span', { className: 'count', 'data-col': 'count', text: String(g.count) }),
          el('span', { className: 'fg-error', text: g.error || '(no error)' }),
        ]),
        el('p', { className: 'fg-facts muted' }, [
          nameNode(g.queue || g.errorQueue),
          ` · ${g.reason}`,
          g.frame ? ` · ${g.frame}` : '',
        ]),
        el('p', { className: 'fg-facts' }, [
          el('span', { 'data-col': 'first-seen', text: `first ${when(g.firstSeen)}` }),
          ' · ',
          el('span', { 'data-col': 'last-seen', text: `last ${when(g.lastSeen)}` }),
        ]),
        el('p', { className: 'fg-sample muted', title: g.sample.error, text: `e.g. ${g.sample.error}` }),
        el('div', { className: 'actions' }, [
          el('button', { type: 'button', 'data-action': 'list', onclick: () => show(g), text: 'List' }),
          el('button', { type: 'button', 'data-action': 'replay', onclick: () => act('replay', g), text: `Replay group (${g.count})` }),
          el('button', { type: 'button', className: 'danger', 'data-action': 'purge', onclick: () => act('purge', g), text: `Purge group (${g.count})` }),
        ]),
      ]),
    );
  }
}

/** Who replayed or purged which group, when, and how many. */
export function renderGroupHistory(list: HTMLElement, actions: readonly GroupActionState[]): void {
  clear(list);
  if (actions.length === 0) list.appendChild(el('li', { className: 'empty', text: 'No group replayed or purged yet (since this instance started).' }));
  for (const a of actions) {
    const verb = a.action === 'replay' ? 'replayed' : 'purged';
    const left = a.failed > 0 ? `, ${a.failed} left parked` : '';
    list.appendChild(el('li', { 'data-group-action': a.group, text: `${when(a.at)} · ${a.by} ${verb} ${a.done} of ${a.matched}${left} · ${a.error || a.group} (${a.errorQueue})` }));
  }
}

/** One row of a message's timeline. */
export interface TimelineRow {
  /** Epoch ms, when known. */
  at?: number;
  what: string;
}

/** An AMQP timestamp as the API's JSON gives it (seconds, or amqplib's `{ value }`), an ISO string, or a Date's text: epoch ms. */
function timeOf(value: unknown): number | undefined {
  if (typeof value === 'number') return value > 100_000_000_000 ? value : value * 1000;
  if (typeof value === 'string') return Number.isNaN(Date.parse(value)) ? undefined : Date.parse(value);
  if (typeof value === 'object' && value !== null && 'value' in value) return timeOf((value as { value: unknown }).value);
  return undefined;
}

/**
 * A parked message's timeline from its death history (the broker's `x-death`, kept as `x-retry-death-history`): each
 * tier it waited in, how many times and when last, then its park with the reason, attempts and last error; oldest first.
 */
export function timelineOf(view: Pick<ParkedMessageView, 'queue' | 'deaths' | 'reason' | 'error' | 'attempts'> & { parkedAt?: string }): TimelineRow[] {
  const rows: TimelineRow[] = [];
  for (const death of view.deaths) {
    if (typeof death !== 'object' || death === null) continue;
    const d = death as Record<string, unknown>;
    const queue = typeof d.queue === 'string' ? d.queue : '?';
    const count = typeof d.count === 'number' ? d.count : 1;
    const tier = queue.startsWith(`${view.queue}.`) ? shortTier(view.queue, queue) : queue;
    const where = queue === view.queue ? `failed in ${queue}` : `waited in tier ${tier}`;
    rows.push({ at: timeOf(d.time), what: `${where} (${String(d.reason ?? '?')}, ${count} time${count === 1 ? '' : 's'})` });
  }
  rows.sort((a, b) => (a.at ?? 0) - (b.at ?? 0));
  const attempts = view.attempts === undefined ? '' : ` after ${view.attempts} attempt${view.attempts === 1 ? '' : 's'}`;
  rows.push({ at: view.parkedAt ? Date.parse(view.parkedAt) : undefined, what: `parked (${view.reason})${attempts}: ${view.error || 'no error recorded'}` });
  return rows;
}

export function renderTimeline(list: HTMLElement, rows: readonly TimelineRow[]): void {
  clear(list);
  for (const row of rows) {
    list.appendChild(el('li', {}, [el('time', { text: row.at === undefined ? '–' : `${new Date(row.at).toLocaleDateString()} ${clock(row.at)}` }), ' ', row.what]));
  }
}
