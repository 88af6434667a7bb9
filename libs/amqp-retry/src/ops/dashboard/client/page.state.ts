/**
 * The page's state and the decisions made from it alone: which queue the page opens on, what the API's filter is, when
 * the list must be read again, what the list's summary says. No DOM here, so that jest tests it under Node.
 */
import type { Filter, MessageView, QueueState } from './api.types.js';
import type { RateHistory } from './queues.view.js';

/** How many parked messages the list shows at a time. */
export const PAGE_SIZE = 50;
/** How often the page reads the queues by itself while auto-refresh is on. */
export const REFRESH_MS = 5000;

export interface PageState {
  /** The latest load's number: a newer load wins, an older answer arriving late is dropped. */
  seq: number;
  queues: QueueState[];
  filter: Filter;
  /** Whether a queue was chosen, by the operator or by the first load. */
  chosen: boolean;
  offset: number;
  total: number;
  items: MessageView[];
  /** The selected messages' keys (see selectionKey). */
  selected: Set<string>;
  detail: MessageView | null;
  /** Auto-refresh: on until the operator pauses it. */
  live: boolean;
  /** The parked depths the groups and the list were last read at: they are read again only when these change. */
  listedAt: string;
  /** The oldest parked message's age among those the groups count (ms), when known. */
  oldestParkedMs: number | undefined;
}

/** What the page's parts share (wired in page.main.ts): the state, the rate readings, and the load all of them ask for. */
export interface Page {
  readonly state: PageState;
  readonly history: RateHistory;
  /** Reads the queues, then the groups and the list; `quiet` (auto-refresh) leaves the status line alone. */
  load(quiet?: boolean): Promise<void>;
}

export function createState(): PageState {
  return {
    seq: 0,
    queues: [],
    filter: {},
    chosen: false,
    offset: 0,
    total: 0,
    items: [],
    selected: new Set<string>(),
    detail: null,
    live: true,
    listedAt: '',
    oldestParkedMs: undefined,
  };
}

export const handlerQueues = (queues: readonly QueueState[]): QueueState[] => queues.filter((q) => q.role !== 'delay-ladder');

/** The queue the filter names, when it names one the page knows. */
export const selectedQueue = (state: Pick<PageState, 'queues' | 'filter'>): QueueState | undefined =>
  state.queues.find((q) => q.queue === state.filter.queue);

/** The handler queue with the most parked messages, which the page opens on; none when nothing is parked. */
export const busiestQueue = (queues: readonly QueueState[]): QueueState | undefined =>
  handlerQueues(queues)
    .filter((q) => q.parked > 0)
    .sort((a, b) => b.parked - a.parked)[0];

/** The filter as the API's query string takes it: empty fields left out. */
export function filterForApi(filter: Filter): Filter {
  const out: Filter = {};
  for (const key of ['queue', 'reason', 'error', 'text', 'since', 'until'] as const) if (filter[key]) out[key] = filter[key];
  return out;
}

/** The parked depths the groups and the list depend on: those of the chosen queue, or of every queue. */
export const listedDepths = (state: Pick<PageState, 'queues' | 'filter'>): string =>
  state.queues
    .filter((q) => !state.filter.queue || q.queue === state.filter.queue)
    .map((q) => `${q.errorQueue}:${q.parked}`)
    .join(',');

/** A selected message's key: its parking queue and its id. */
export const selectionKey = (item: Pick<MessageView, 'errorQueue' | 'id'>): string => `${item.errorQueue}\n${item.id}`;

/** The selected messages' ids by parking queue, in the order they were selected. */
export function selectionByQueue(keys: Iterable<string>): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const key of keys) {
    const i = key.indexOf('\n');
    const errorQueue = key.slice(0, i);
    groups.set(errorQueue, [...(groups.get(errorQueue) ?? []), key.slice(i + 1)]);
  }
  return groups;
}

/** Each message once, by parking queue and id, in the order given (the search's two answers may share some). */
export function distinctMessages<T extends Pick<MessageView, 'errorQueue' | 'id'>>(items: readonly T[]): T[] {
  const seen = new Set<string>();
  return items.filter((m) => !seen.has(m.errorQueue + m.id) && seen.add(m.errorQueue + m.id));
}

/** The offset of the last page that still has messages, for a page that emptied. */
export const lastPageOffset = (total: number): number => Math.floor((total - 1) / PAGE_SIZE) * PAGE_SIZE;

/** The line above the list: which messages of how many it shows. */
export function listSummary(total: number, offset: number, shown: number): string {
  const from = total === 0 ? 0 : offset + 1;
  return total === 0 ? 'No parked message matches.' : `Showing ${from}–${offset + shown} of ${total} matching.`;
}

/** "Page 2 of 3", or '' when the matching messages fit on one page. */
export const pageInfo = (total: number, offset: number): string =>
  total > PAGE_SIZE ? `Page ${Math.floor(offset / PAGE_SIZE) + 1} of ${Math.ceil(total / PAGE_SIZE)}` : '';

/** The filter the form's fields say (`value` reads one by name); its times from the browser's time zone to ISO. */
export function filterFromFields(value: (name: string) => string): Filter {
  const iso = (v: string) => (v ? new Date(v).toISOString() : undefined);
  return {
    queue: value('errorQueue') || undefined,
    reason: value('reason').trim() || undefined,
    error: value('error').trim() || undefined,
    text: value('text') || undefined,
    since: iso(value('since')),
    until: iso(value('until')),
  };
}

/** The refresh line: auto-refresh on or paused, and when the page last read the queues. */
export const refreshedText = (live: boolean, readAt: string): string =>
  live ? `Refreshes every ${REFRESH_MS / 1000} s · read ${readAt}` : `Auto-refresh paused · read ${readAt}`;

/** The filter the failure groups are counted under: the page's, but for its reason and error (the groups show every one). */
export function groupsFilter(filter: Filter): Filter {
  const { reason: _reason, error: _error, ...rest } = filterForApi(filter);
  return rest;
}

/**
 * The body of a failure group's replay or purge: the group narrowed by the filter its count was read under (`counted`,
 * see groupsFilter), so that the action takes the messages the count showed, and that count as the one confirmed
 * (`expected`: the server refuses with 409 when another number matches by then).
 */
export function groupActionBody(group: { errorQueue: string; key: string; count: number }, counted: Filter): Record<string, unknown> {
  const filter = groupsFilter(counted);
  return { errorQueue: group.errorQueue, group: group.key, expected: group.count, ...(Object.keys(filter).length > 0 && { filter }) };
}
