/**
 * The parked-messages page's script: built by scripts/build-client.mjs into one file served from the page's own route,
 * so that the CSP can forbid inline scripts. Message data reaches the DOM only as text (see dom.helpers.ts).
 */
import type { ActionResult, Filter, FlowState, MessagePage, MessageView, PartitionsState, QueueState, Summary } from './api.types.js';
import { byId, clear, el, meta } from './dom.helpers.js';
import { renderFlow } from './flow.view.js';
import { renderHistory, renderInstances, renderStrip } from './console.view.js';
import { renderFailureGroups, renderGroupHistory, renderTimeline, timelineOf, type GroupActionState, type GroupState } from './groups.view.js';
import type { FleetState, HistoryState } from './api.types.js';
import { renderOutbox, type OutboxState } from './outbox.view.js';
import { renderPartitions } from './partitions.view.js';
import { RateHistory, renderHandlerQueues, renderLadders } from './queues.view.js';
import { depth, headerRows, json, plural, preview, query, toLocalInput } from './view.format.js';

const TOKEN = meta('retry-dashboard-token');
const BASE = meta('retry-dashboard-base');
const PAGE_SIZE = 50;
/** How often the page reads the queues by itself while auto-refresh is on. */
const REFRESH_MS = 5000;

type Verb = 'Replayed' | 'Purged';

const state = {
  seq: 0,
  queues: [] as QueueState[],
  filter: {} as Filter,
  chosen: false,
  offset: 0,
  total: 0,
  items: [] as MessageView[],
  selected: new Set<string>(),
  detail: null as MessageView | null,
  /** Auto-refresh: on until the operator pauses it. */
  live: true,
  /** The parked depths the groups and the list were last read at: they are read again only when these change. */
  listedAt: '',
  /** The oldest parked message's age among those the groups count (ms), when known. */
  oldestParkedMs: undefined as number | undefined,
};
const history = new RateHistory();

// The script runs: the notice that says what to do when it cannot (see BOOT_STYLE) goes.
const boot = document.getElementById('boot');
if (boot) boot.hidden = true;

function status(text: string, kind = ''): void {
  const node = byId('status');
  node.textContent = text;
  node.className = kind;
}

/**
 * The server refused one of the page's own requests (401 or 403): say so where it cannot be missed, with what to do.
 * A guard that lets the page through but not its API (a header the browser does not send by itself) lands here.
 */
function refused(code: number, message: string): void {
  const what = code === 401 ? 'Not signed in (401 Unauthorized)' : 'Not allowed (403 Forbidden)';
  byId('refused-title').textContent = `${what}: the server refused this page’s request to its API.`;
  byId('refused-server').textContent = message ? `The server said: ${message}` : '';
  byId('refused-base').textContent = BASE;
  byId('refused').hidden = false;
  document.body.classList.add('is-refused');
  status(`${what}.`, 'error');
}

async function api<T>(path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const init: RequestInit = { method: body === undefined ? 'GET' : 'POST', credentials: 'same-origin', headers };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['x-retry-dashboard-token'] = TOKEN;
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`${BASE}/api/${path}`, init);
  const text = await response.text();
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null; // not JSON: the status line says what the server sent
  }
  if (!response.ok) {
    const said = (data as { message?: unknown } | null)?.message;
    const message = said ? (Array.isArray(said) ? said.join('; ') : String(said)) : text;
    if (response.status === 401 || response.status === 403) refused(response.status, message || response.statusText);
    throw new Error(`${response.status} ${message || response.statusText}`);
  }
  return data as T;
}

function confirmAction(text: string): Promise<boolean> {
  return new Promise((resolve) => {
    const dialog = byId<HTMLDialogElement>('confirm');
    const ok = byId('confirm-ok');
    const cancel = byId('confirm-cancel');
    byId('confirm-text').textContent = text;
    const done = (answer: boolean) => {
      ok.onclick = null;
      cancel.onclick = null;
      dialog.onclose = null;
      if (dialog.open) dialog.close();
      resolve(answer);
    };
    ok.onclick = () => done(true);
    cancel.onclick = () => done(false);
    dialog.onclose = () => done(false);
    dialog.showModal();
  });
}

const handlerQueues = () => state.queues.filter((q) => q.role !== 'delay-ladder');
const selectedQueue = () => state.queues.find((q) => q.queue === state.filter.queue);

function renderQueues(): void {
  renderHandlerQueues(byId<HTMLTableElement>('queues').tBodies[0], handlerQueues(), state.filter.queue, history, chooseQueue);
  renderLadders(
    byId('ladders-section'),
    byId<HTMLTableElement>('ladders').tBodies[0],
    state.queues.filter((q) => q.role === 'delay-ladder'),
    chooseQueue,
  );
  const select = byId<HTMLSelectElement>('f-queue');
  const current = state.filter.queue ?? '';
  clear(select);
  select.appendChild(el('option', { value: '', text: 'All queues' }));
  for (const q of state.queues) {
    const label = q.role === 'delay-ladder' ? `${q.queue} (delay ladder, ${depth(q.parked)} parked)` : `${q.queue} (${depth(q.parked)} parked)`;
    select.appendChild(el('option', { value: q.queue, text: label }));
  }
  select.value = current;
}

function renderGroups(summary: Summary): void {
  const specs = [
    ['by-reason', summary.byReason.map((g) => ({ key: 'reason' as const, value: g.reason, count: g.count }))],
    ['by-error', summary.byError.map((g) => ({ key: 'error' as const, value: g.error, count: g.count }))],
  ] as const;
  for (const [id, groups] of specs) {
    const list = byId(id);
    clear(list);
    if (groups.length === 0) list.appendChild(el('li', { className: 'empty', text: 'Nothing parked.' }));
    for (const group of groups) {
      const label = group.value || '(none)';
      const choose = () => void applyFilter({ ...state.filter, reason: undefined, error: undefined, [group.key]: group.value });
      list.appendChild(
        el('li', {}, [
          el('button', { type: 'button', className: 'group', 'data-group': group.key, title: label, onclick: choose }, [
            el('span', { className: 'group-label', text: label }),
            el('span', { className: 'count', text: String(group.count) }),
          ]),
        ]),
      );
    }
  }
}

/** The failure groups of what the groups count, their history, and the oldest parked message's age for the strip. */
function renderWorkGroups(summary: Summary): void {
  const oldest = (summary as { oldestParkedAt?: string }).oldestParkedAt;
  state.oldestParkedMs = oldest ? Math.max(0, Date.now() - Date.parse(oldest)) : undefined;
  const groups = (summary.groups ?? []) as unknown as GroupState[];
  renderFailureGroups(byId('failure-groups'), groups, (action, group) => void actOnGroup(action, group), (group) =>
    void applyFilter({ queue: group.queue || undefined }),
  );
  api<GroupActionState[]>('groups/actions').then(
    (actions) => renderGroupHistory(byId('group-history'), actions),
    () => undefined,
  );
}

/** Replays or purges a whole failure group, once confirmed; the answer is recorded by the server and shown. */
async function actOnGroup(action: 'replay' | 'purge', group: GroupState): Promise<void> {
  const question =
    action === 'replay'
      ? `Replay the ${group.count} messages of "${group.error}" to ${group.queue || 'their queue'}? Each returns once.`
      : `Purge the ${group.count} messages of "${group.error}"? They are deleted for good.`;
  if (!(await confirmAction(question))) return status('Cancelled.');
  status(action === 'replay' ? 'Replaying the group…' : 'Purging the group…');
  try {
    const done = await api<GroupActionState>(`groups/${action}`, { errorQueue: group.errorQueue, group: group.key });
    await load(true);
    status(`${action === 'replay' ? 'Replayed' : 'Purged'} ${done.done} of ${done.matched} of the group${done.failed > 0 ? `; ${done.failed} left parked` : ''}.`);
  } catch (error) {
    status(`The group ${action} failed: ${(error as Error).message}`, 'error');
  }
}

/** Every parked message of the application's parking queues with this message id or correlation id. */
async function search(id: string): Promise<void> {
  const results = byId('search-results');
  clear(results);
  byId('search-summary').textContent = 'Searching…';
  try {
    const [byMessage, byCorrelation] = await Promise.all([
      api<MessagePage>(`messages${query({ messageId: id, limit: PAGE_SIZE })}`),
      api<MessagePage>(`messages${query({ correlationId: id, limit: PAGE_SIZE })}`),
    ]);
    const seen = new Set<string>();
    const items = [...byMessage.items, ...byCorrelation.items].filter((m) => !seen.has(m.errorQueue + m.id) && seen.add(m.errorQueue + m.id));
    byId('search-summary').textContent = items.length === 0 ? `No parked message has the id or correlation id ${id}.` : `${plural(items.length, 'parked message')} found.`;
    for (const item of items) {
      results.appendChild(
        el('li', { className: 'message', 'data-found': item.id }, [
          el('button', { type: 'button', className: 'link', onclick: () => void openDetail(item.errorQueue, item.id), text: `${item.queue || item.errorQueue} · ${item.reason} · ${item.error}` }),
        ]),
      );
    }
  } catch (error) {
    byId('search-summary').textContent = `Could not search: ${(error as Error).message}`;
  }
}

function renderList(): void {
  const list = byId('messages');
  clear(list);
  for (const item of state.items) {
    const key = `${item.errorQueue}\n${item.id}`;
    const box = el('input', {
      type: 'checkbox',
      'aria-label': `Select message ${item.id}`,
      onchange: (event) => {
        if ((event.target as HTMLInputElement).checked) state.selected.add(key);
        else state.selected.delete(key);
        updateBulk();
      },
    });
    box.checked = state.selected.has(key);
    list.appendChild(
      el('li', { className: 'message', 'data-id': item.id, 'data-error-queue': item.errorQueue }, [
        el('div', { className: 'message-head' }, [
          box,
          el('span', { className: `badge reason-${item.reason.replace(/[^a-z-]/g, '')}`, text: item.reason || '?' }),
          el('span', { className: 'queue', text: item.queue || '(unknown queue)' }),
          el('time', { text: item.parkedAt ? new Date(item.parkedAt).toLocaleString() : '' }),
        ]),
        el('p', { className: 'error', text: item.error }),
        el('pre', { className: 'preview', text: preview(item) }),
        el('div', { className: 'actions' }, [
          el('button', { type: 'button', className: 'open', text: 'Details', onclick: () => void openDetail(item.errorQueue, item.id) }),
          el('button', { type: 'button', className: 'replay-one', text: 'Replay', onclick: () => void replayOne(item) }),
        ]),
      ]),
    );
  }
  const from = state.total === 0 ? 0 : state.offset + 1;
  byId('list-summary').textContent =
    state.total === 0 ? 'No parked message matches.' : `Showing ${from}–${state.offset + state.items.length} of ${state.total} matching.`;
  byId('page-info').textContent =
    state.total > PAGE_SIZE ? `Page ${Math.floor(state.offset / PAGE_SIZE) + 1} of ${Math.ceil(state.total / PAGE_SIZE)}` : '';
  byId<HTMLButtonElement>('prev').disabled = state.offset === 0;
  byId<HTMLButtonElement>('next').disabled = state.offset + state.items.length >= state.total;
  updateBulk();
}

function updateBulk(): void {
  const one = !!selectedQueue();
  byId<HTMLButtonElement>('replay-selected').disabled = state.selected.size === 0;
  byId<HTMLButtonElement>('purge-selected').disabled = state.selected.size === 0;
  const hint = one ? '' : 'Choose one queue to act on all matching messages.';
  for (const id of ['replay-filtered', 'purge-filtered', 'export-filtered']) {
    const button = byId<HTMLButtonElement>(id);
    button.disabled = !one || state.total === 0;
    button.title = hint;
  }
}

function filterForApi(): Filter {
  const out: Filter = {};
  for (const key of ['queue', 'reason', 'error', 'text', 'since', 'until'] as const) if (state.filter[key]) out[key] = state.filter[key];
  return out;
}

/** The parked depths the groups and the list depend on: those of the chosen queue, or of every queue. */
const listedDepths = () =>
  state.queues
    .filter((q) => !state.filter.queue || q.queue === state.filter.queue)
    .map((q) => `${q.errorQueue}:${q.parked}`)
    .join(',');

async function readQueues(): Promise<QueueState[]> {
  const queues = await api<QueueState[]>('queues');
  history.add(queues, Date.now());
  return queues;
}

/**
 * Queues first (depth checks only, cheap), then the groups and the list, which read whole parking queues: at the
 * first load they are read for the queue with the most parked messages only, not for every queue at once. `quiet`
 * (auto-refresh) leaves the status line alone, so that it keeps the report of the operator's last action.
 */
async function load(quiet = false): Promise<void> {
  if (!quiet) status('Loading…');
  const seq = ++state.seq; // a newer load wins: an older answer arriving late must not overwrite it
  try {
    const queues = await readQueues();
    if (seq !== state.seq) return;
    state.queues = queues;
    if (!state.chosen) {
      state.chosen = true;
      const worst = handlerQueues()
        .filter((q) => q.parked > 0)
        .sort((a, b) => b.parked - a.parked)[0];
      if (worst) state.filter = { ...state.filter, queue: worst.queue };
      syncForm();
    }
    renderQueues();
    void loadFlow(quiet);
    void loadPartitions(seq);
    void loadConsole(seq);
    // The outbox's backlog beside the queues; a failure to read it never holds the page back.
    api<OutboxState>('outbox').then(
      (outbox) => seq === state.seq && renderOutbox(outbox),
      () => renderOutbox(null),
    );
    const filter = filterForApi();
    // The groups leave out the reason and error chosen, so that choosing one does not hide the others.
    const [summary, page] = await Promise.all([
      api<Summary>(`summary${query({ ...filter, reason: undefined, error: undefined })}`),
      api<MessagePage>(`messages${query({ ...filter, offset: state.offset, limit: PAGE_SIZE })}`),
    ]);
    if (seq !== state.seq) return;
    if (page.items.length === 0 && state.offset > 0 && page.total > 0) {
      // The page emptied (its messages replayed or purged): show the last page that still has some.
      state.offset = Math.floor((page.total - 1) / PAGE_SIZE) * PAGE_SIZE;
      return load(quiet);
    }
    state.total = page.total;
    state.items = page.items;
    state.listedAt = listedDepths();
    renderGroups(summary);
    renderWorkGroups(summary);
    renderList();
    refreshed();
    if (!quiet) status('Updated.'); // the one clock is the refresh line's
    renderGroupsScope();
  } catch (error) {
    if (seq === state.seq) status(`Could not load: ${(error as Error).message}`, 'error');
  }
}

/**
 * One auto-refresh: the queues' depths and rates; the groups and the list only when a parked depth they show changed
 * (they read whole parking queues), and not while a dialog is open over them.
 */
async function tick(): Promise<void> {
  if (!state.live || document.hidden) return;
  const seq = state.seq;
  try {
    const queues = await readQueues();
    if (seq !== state.seq || !state.live) return; // a load started meanwhile: it shows newer figures
    state.queues = queues;
    renderQueues();
    void loadFlow(true);
    void loadPartitions(seq);
    void loadConsole(seq);
    refreshed();
    const dialogOpen = byId<HTMLDialogElement>('detail').open || byId<HTMLDialogElement>('confirm').open;
    if (listedDepths() !== state.listedAt && !dialogOpen) await load(true);
  } catch (error) {
    byId('refreshed').textContent = `Auto-refresh failed: ${(error as Error).message}`;
  }
}

/**
 * The instances, the strip and the last hour, from the heartbeats the serving instance keeps. A failure leaves the
 * rest of the page as it is: the strip says the heartbeats could not be read.
 */
async function loadConsole(seq: number): Promise<void> {
  try {
    const [fleet, hour] = await Promise.all([api<FleetState>('fleet'), api<HistoryState>('history?minutes=60')]);
    if (seq !== state.seq) return;
    renderStrip(byId('strip'), fleet, state.oldestParkedMs);
    renderInstances(byId<HTMLTableElement>('instances').tBodies[0], byId('instances-note'), fleet);
    renderHistory(byId<HTMLTableElement>('history').tBodies[0], hour);
  } catch (error) {
    byId('strip').textContent = `Could not read the instances' heartbeats: ${(error as Error).message}`;
  }
}

/** The groups' heading says which parking queue they count. */
function renderGroupsScope(): void {
  const q = state.filter.queue;
  byId('groups-scope').textContent = q ? ` · ${q}` : ' · every queue';
}

function refreshed(): void {
  byId('refreshed').textContent = state.live
    ? `Refreshes every ${REFRESH_MS / 1000} s · read ${new Date().toLocaleTimeString()}`
    : `Auto-refresh paused · read ${new Date().toLocaleTimeString()}`;
}

function setLive(live: boolean, now = true): void {
  state.live = live;
  const button = byId('auto-refresh');
  button.textContent = live ? 'Pause auto-refresh' : 'Resume auto-refresh';
  button.setAttribute('aria-pressed', live ? 'false' : 'true');
  refreshed();
  if (live && now) void tick();
}

function syncForm(): void {
  const form = byId<HTMLFormElement>('filter');
  const field = (name: string) => form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement;
  const { filter } = state;
  field('errorQueue').value = filter.queue ?? '';
  for (const key of ['reason', 'error', 'text'] as const) field(key).value = filter[key] ?? '';
  for (const key of ['since', 'until'] as const) field(key).value = filter[key] ? toLocalInput(filter[key] as string) : '';
}

function applyFilter(filter: Filter): Promise<void> {
  state.filter = filter;
  state.offset = 0;
  state.selected.clear();
  state.chosen = true;
  syncForm();
  return load();
}

function chooseQueue(queue: string): void {
  void applyFilter({ ...state.filter, queue });
}

function report(verb: Verb, result: ActionResult): void {
  const done = verb === 'Purged' ? result.purged : result.replayed;
  let text = `${verb} ${done ?? 0} of ${result.matched} matching.`;
  const failed = result.failed ?? [];
  if (failed.length > 0)
    text += ` ${failed.length} left parked: ${failed
      .slice(0, 3)
      .map((f) => `${f.id} (${f.error})`)
      .join('; ')}`;
  status(text, failed.length > 0 ? 'error' : 'ok');
}

async function act(path: string, body: unknown, verb: Verb, question: string): Promise<void> {
  if (!(await confirmAction(question))) return status('Cancelled.');
  status(verb === 'Purged' ? 'Purging…' : 'Replaying…');
  try {
    const result = await api<ActionResult>(path, body);
    state.selected.clear();
    await load();
    report(verb, result);
  } catch (error) {
    status(`${verb === 'Purged' ? 'Purge' : 'Replay'} failed: ${(error as Error).message}`, 'error');
  }
}

function replayOne(item: MessageView): Promise<void> {
  return act(
    'replay',
    { errorQueue: item.errorQueue, ids: [item.id] },
    'Replayed',
    `Replay this message to ${item.queue || 'its queue'} with fresh attempts?`,
  );
}

async function bySelection(verb: Verb, path: string): Promise<void> {
  const groups = new Map<string, string[]>();
  for (const key of state.selected) {
    const i = key.indexOf('\n');
    const errorQueue = key.slice(0, i);
    groups.set(errorQueue, [...(groups.get(errorQueue) ?? []), key.slice(i + 1)]);
  }
  const n = state.selected.size;
  const question =
    verb === 'Replayed'
      ? `Replay ${plural(n, 'selected message')} with fresh attempts?`
      : `Purge ${plural(n, 'selected message')}? They are deleted for good.`;
  if (!(await confirmAction(question))) return status('Cancelled.');
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
    await load();
    report(verb, total);
  } catch (error) {
    status(`Failed: ${(error as Error).message}`, 'error');
    void load(true);
  }
}

function byFilter(verb: Verb, path: string): Promise<void> | undefined {
  const q = selectedQueue();
  if (!q) return undefined;
  const filter = filterForApi();
  const what = `${plural(state.total, 'message')} parked in ${q.errorQueue}${Object.keys(filter).length > 1 ? ' that match the filter' : ''}`;
  const question = verb === 'Replayed' ? `Replay all ${what} to ${q.queue}?` : `Purge all ${what}? They are deleted for good.`;
  return act(path, { errorQueue: q.errorQueue, filter }, verb, question);
}

/** Downloads through fetch, so that whatever the guard reads (a header, a cookie) goes with it as with every call. */
async function exportFiltered(): Promise<void> {
  const q = selectedQueue();
  if (!q) return;
  status('Exporting…');
  try {
    const response = await fetch(`${BASE}/api/export${query({ errorQueue: q.errorQueue, ...filterForApi() })}`, { credentials: 'same-origin' });
    const text = await response.text();
    if (!response.ok) {
      if (response.status === 401 || response.status === 403) refused(response.status, text);
      throw new Error(`${response.status} ${text}`);
    }
    const count = text.split('\n').filter((line) => line !== '').length;
    const link = el('a', {
      href: URL.createObjectURL(new Blob([text], { type: 'application/x-ndjson' })),
      download: `${q.errorQueue.replace(/[^A-Za-z0-9._-]/g, '_')}.jsonl`,
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

function fact(list: HTMLElement, name: string, value: unknown): void {
  if (value === undefined || value === null || value === '') return;
  list.appendChild(el('dt', { text: name }));
  list.appendChild(el('dd', { text: String(value) }));
}

/** Headers one by one: a string as it is (a stack keeps its line breaks), anything else as JSON. */
function renderHeaders(headers: Record<string, unknown>): void {
  const list = byId('detail-headers');
  clear(list);
  const rows = headerRows(headers);
  if (rows.length === 0) list.appendChild(el('p', { className: 'empty', text: 'None.' }));
  for (const row of rows) {
    list.appendChild(el('dt', { text: row.name }));
    list.appendChild(el('dd', { 'data-header': row.name }, [row.multiline ? el('pre', { text: row.value }) : row.value]));
  }
}

async function openDetail(errorQueue: string, id: string): Promise<void> {
  try {
    const item = await api<MessageView>(`messages/${encodeURIComponent(errorQueue)}/${encodeURIComponent(id)}`);
    state.detail = item;
    const facts = byId('detail-facts');
    clear(facts);
    fact(facts, 'Id', item.id);
    fact(facts, 'Queue', item.queue || '(unknown)');
    fact(facts, 'Parking queue', item.errorQueue);
    fact(facts, 'Reason', item.reason);
    fact(facts, 'Error', item.error);
    fact(facts, 'Parked at', item.parkedAt ? new Date(item.parkedAt).toLocaleString() : '');
    fact(facts, 'Attempts', item.attempts);
    fact(facts, 'Body encoding', item.bodyEncoding);
    renderTimeline(byId('detail-timeline'), timelineOf(item));
    byId('detail-body').textContent = item.body;
    byId('detail-properties').textContent = json(item.properties);
    renderHeaders(item.headers);
    byId('detail-deaths').textContent = item.deaths.length > 0 ? json(item.deaths) : 'None.';
    byId('edit-area').hidden = true;
    byId('detail-send-edit').hidden = true;
    byId('detail-edit').hidden = item.bodyEncoding !== 'utf8';
    byId<HTMLDialogElement>('detail').showModal();
  } catch (error) {
    status(`Could not open the message: ${(error as Error).message}`, 'error');
  }
}

/** Consumption: each handler queue's state with its Pause or Resume button; `quiet` (auto-refresh) says nothing of a failure. */
async function loadFlow(quiet = false): Promise<void> {
  try {
    renderFlow(byId('flow'), await api<FlowState[]>('queue-states'), (kind, queue) => void changeFlow(kind, queue));
  } catch (error) {
    if (!quiet) status(`Could not read the queue states: ${(error as Error).message}`, 'error');
  }
}

/** Partitioned handlers' partitions, owners and depths; a failure to read them never holds the page back (the section hides). */
function loadPartitions(seq: number): Promise<void> {
  return api<PartitionsState[]>('partitions').then(
    (handlers) => void (seq === state.seq && renderPartitions(handlers)),
    () => renderPartitions(null),
  );
}

const BY_KEY = 'retry-dashboard-by';

/**
 * Pauses or resumes a queue in every instance that consumes it, asking once per tab who acts (a guard's signed-in user
 * wins on the server) and, for a pause, why: both are shown with the state here, in the log line and to the CLI.
 */
async function changeFlow(kind: 'pause' | 'resume', queue: string): Promise<void> {
  const by = sessionStorage.getItem(BY_KEY) || window.prompt(`Your name (shown with the ${kind})`) || '';
  if (!by.trim()) return status('Cancelled.');
  sessionStorage.setItem(BY_KEY, by);
  const reason = kind === 'pause' ? window.prompt(`Why pause ${queue}? Its messages wait in the broker until it is resumed.`) : '';
  if (reason === null) return status('Cancelled.');
  try {
    const changed = await api<FlowState>(`queue-states/${kind}`, { queue, by, reason: reason || undefined });
    status(`${queue} is ${changed.state}.`, 'ok');
    await Promise.all([loadFlow(), load(true)]); // the State column says it too
  } catch (error) {
    status(`Could not ${kind} ${queue}: ${(error as Error).message}`, 'error');
  }
}

function closeDetail(): void {
  const dialog = byId<HTMLDialogElement>('detail');
  if (dialog.open) dialog.close();
}

const on = (id: string, listener: (event: Event) => void) => byId(id).addEventListener('click', listener);

document.addEventListener('DOMContentLoaded', () => {
  on('refresh', () => void load());
  on('auto-refresh', () => setLive(!state.live));
  byId('filter').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement).value;
    const iso = (v: string) => (v ? new Date(v).toISOString() : undefined);
    void applyFilter({
      queue: value('errorQueue') || undefined,
      reason: value('reason').trim() || undefined,
      error: value('error').trim() || undefined,
      text: value('text') || undefined,
      since: iso(value('since')),
      until: iso(value('until')),
    });
  });
  on('clear-filter', () => void applyFilter({}));
  byId('search').addEventListener('submit', (event) => {
    event.preventDefault();
    const id = byId<HTMLInputElement>('search-id').value.trim();
    if (id) void search(id);
  });
  on('prev', () => {
    state.offset = Math.max(0, state.offset - PAGE_SIZE);
    void load();
  });
  on('next', () => {
    state.offset += PAGE_SIZE;
    void load();
  });
  on('replay-selected', () => void bySelection('Replayed', 'replay'));
  on('purge-selected', () => void bySelection('Purged', 'purge'));
  on('replay-filtered', () => void byFilter('Replayed', 'replay'));
  on('purge-filtered', () => void byFilter('Purged', 'purge'));
  on('export-filtered', () => void exportFiltered());
  on('detail-close', closeDetail);
  on('detail-replay', () => {
    const d = state.detail;
    closeDetail();
    if (d) void replayOne(d);
  });
  on('detail-purge', () => {
    const d = state.detail;
    closeDetail();
    if (d) void act('purge', { errorQueue: d.errorQueue, ids: [d.id] }, 'Purged', 'Purge this message? It is deleted for good.');
  });
  on('detail-edit', () => {
    const area = byId<HTMLTextAreaElement>('edit-body');
    area.value = state.detail ? state.detail.body : '';
    byId('edit-area').hidden = false;
    byId('detail-send-edit').hidden = false;
    area.focus();
  });
  on('detail-send-edit', () => {
    const d = state.detail;
    const body = byId<HTMLTextAreaElement>('edit-body').value;
    closeDetail();
    if (d)
      void act(
        'edit-and-replay',
        { errorQueue: d.errorQueue, id: d.id, body },
        'Replayed',
        `Replay this message to ${d.queue || 'its queue'} with the corrected body (${body.length} characters)?`,
      );
  });
  setInterval(() => void tick(), REFRESH_MS);
  setLive(true, false);
  void load();
});
