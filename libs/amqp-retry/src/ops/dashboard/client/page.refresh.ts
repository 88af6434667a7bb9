/**
 * Reading the page's figures: the full load (queues, then the groups and the list) and the auto-refresh's tick, which
 * reads the list again only when a parked depth it shows changed; the refresh line says when the page last read them.
 */
import type { Filter, FleetState, HistoryState, MessagePage, PartitionsState, QueueState, Summary } from './api.types.js';
import { api } from './api.client.js';
import { renderHistory, renderInstances, renderStrip } from './console.view.js';
import { byId } from './dom.helpers.js';
import { applyFilter, renderQueueOptions, syncForm } from './filter.form.js';
import { loadFlow } from './flow.actions.js';
import { renderFailureGroups, renderGroupHistory, type GroupActionState, type GroupState } from './groups.view.js';
import { actOnGroup, replayOne } from './message.actions.js';
import { openDetail } from './message.detail.js';
import { renderGroups, renderList } from './messages.view.js';
import { renderOutbox, type OutboxState } from './outbox.view.js';
import { busiestQueue, filterForApi, groupsFilter, handlerQueues, lastPageOffset, listedDepths, PAGE_SIZE, refreshedText, type Page } from './page.state.js';
import { renderPartitions } from './partitions.view.js';
import { renderHandlerQueues, renderLadders } from './queues.view.js';
import { status } from './status.view.js';
import { query } from './view.format.js';

async function readQueues(page: Page): Promise<QueueState[]> {
  const queues = await api<QueueState[]>('queues');
  page.history.add(queues, Date.now());
  return queues;
}

function renderQueues(page: Page): void {
  const { state } = page;
  const chooseQueue = (queue: string) => void applyFilter(page, { ...state.filter, queue });
  renderHandlerQueues(byId<HTMLTableElement>('queues').tBodies[0], handlerQueues(state.queues), state.filter.queue, page.history, chooseQueue);
  renderLadders(
    byId('ladders-section'),
    byId<HTMLTableElement>('ladders').tBodies[0],
    state.queues.filter((q) => q.role === 'delay-ladder'),
    chooseQueue,
  );
  renderQueueOptions(state.queues, state.filter.queue);
}

/**
 * The failure groups of what the groups count (read under the filter `counted`, which their actions take too), their
 * history, and the oldest parked message's age for the strip.
 */
function renderWorkGroups(page: Page, summary: Summary, counted: Filter): void {
  const oldest = (summary as { oldestParkedAt?: string }).oldestParkedAt;
  page.state.oldestParkedMs = oldest ? Math.max(0, Date.now() - Date.parse(oldest)) : undefined;
  const groups = (summary.groups ?? []) as unknown as GroupState[];
  renderFailureGroups(
    byId('failure-groups'),
    groups,
    (action, group) => void actOnGroup(page, action, group, counted),
    (group) => void applyFilter(page, { queue: group.queue || undefined }),
  );
  api<GroupActionState[]>('groups/actions').then(
    (actions) => renderGroupHistory(byId('group-history'), actions),
    () => undefined,
  );
}

/** The groups' heading says which parking queue they count. */
function renderGroupsScope(page: Page): void {
  const q = page.state.filter.queue;
  byId('groups-scope').textContent = q ? ` · ${q}` : ' · every queue';
}

function refreshed(page: Page): void {
  byId('refreshed').textContent = refreshedText(page.state.live, new Date().toLocaleTimeString());
}

/**
 * Queues first (depth checks only, cheap), then the groups and the list, which read whole parking queues: at the
 * first load they are read for the queue with the most parked messages only, not for every queue at once. `quiet`
 * (auto-refresh) leaves the status line alone, so that it keeps the report of the operator's last action.
 */
export async function load(page: Page, quiet = false): Promise<void> {
  const { state } = page;
  if (!quiet) status('Loading…');
  const seq = ++state.seq; // a newer load wins: an older answer arriving late must not overwrite it
  try {
    const queues = await readQueues(page);
    if (seq !== state.seq) return;
    state.queues = queues;
    if (!state.chosen) {
      state.chosen = true;
      const worst = busiestQueue(state.queues);
      if (worst) state.filter = { ...state.filter, queue: worst.queue };
      syncForm(state);
    }
    renderQueues(page);
    void loadFlow(page, quiet);
    void loadPartitions(page, seq);
    void loadConsole(page, seq);
    // The outbox's backlog beside the queues; a failure to read it never holds the page back.
    api<OutboxState>('outbox').then(
      (outbox) => seq === state.seq && renderOutbox(outbox),
      () => renderOutbox(null),
    );
    const filter = filterForApi(state.filter);
    // The groups leave out the reason and error chosen, so that choosing one does not hide the others.
    const counted = groupsFilter(state.filter);
    const [summary, list] = await Promise.all([
      api<Summary>(`summary${query({ ...counted })}`),
      api<MessagePage>(`messages${query({ ...filter, offset: state.offset, limit: PAGE_SIZE })}`),
    ]);
    if (seq !== state.seq) return;
    if (list.items.length === 0 && state.offset > 0 && list.total > 0) {
      // The page emptied (its messages replayed or purged): show the last page that still has some.
      state.offset = lastPageOffset(list.total);
      return load(page, quiet);
    }
    state.total = list.total;
    state.items = list.items;
    state.listedAt = listedDepths(state);
    renderGroups(summary, (key, value) => void applyFilter(page, { ...state.filter, reason: undefined, error: undefined, [key]: value }));
    renderWorkGroups(page, summary, counted);
    renderList(
      state,
      (item) => void openDetail(page, item.errorQueue, item.id),
      (item) => void replayOne(page, item),
    );
    refreshed(page);
    if (!quiet) status('Updated.'); // the one clock is the refresh line's
    renderGroupsScope(page);
  } catch (error) {
    if (seq === state.seq) status(`Could not load: ${(error as Error).message}`, 'error');
  }
}

/**
 * One auto-refresh: the queues' depths and rates; the groups and the list only when a parked depth they show changed
 * (they read whole parking queues), and not while a dialog is open over them.
 */
export async function tick(page: Page): Promise<void> {
  const { state } = page;
  if (!state.live || document.hidden) return;
  const seq = state.seq;
  try {
    const queues = await readQueues(page);
    if (seq !== state.seq || !state.live) return; // a load started meanwhile: it shows newer figures
    state.queues = queues;
    renderQueues(page);
    void loadFlow(page, true);
    void loadPartitions(page, seq);
    void loadConsole(page, seq);
    refreshed(page);
    const dialogOpen = byId<HTMLDialogElement>('detail').open || byId<HTMLDialogElement>('confirm').open;
    if (listedDepths(state) !== state.listedAt && !dialogOpen) await load(page, true);
  } catch (error) {
    byId('refreshed').textContent = `Auto-refresh failed: ${(error as Error).message}`;
  }
}

/** Turns auto-refresh on or off; turned on, it reads the queues at once unless `now` is false. */
export function setLive(page: Page, live: boolean, now = true): void {
  page.state.live = live;
  const button = byId('auto-refresh');
  button.textContent = live ? 'Pause auto-refresh' : 'Resume auto-refresh';
  button.setAttribute('aria-pressed', live ? 'false' : 'true');
  refreshed(page);
  if (live && now) void tick(page);
}

/**
 * The instances, the strip and the last hour, from the heartbeats the serving instance keeps. A failure leaves the
 * rest of the page as it is: the strip says the heartbeats could not be read.
 */
async function loadConsole(page: Page, seq: number): Promise<void> {
  try {
    const [fleet, hour] = await Promise.all([api<FleetState>('fleet'), api<HistoryState>('history?minutes=60')]);
    if (seq !== page.state.seq) return;
    renderStrip(byId('strip'), fleet, page.state.oldestParkedMs);
    renderInstances(byId<HTMLTableElement>('instances').tBodies[0], byId('instances-note'), fleet);
    renderHistory(byId<HTMLTableElement>('history').tBodies[0], hour);
  } catch (error) {
    byId('strip').textContent = `Could not read the instances' heartbeats: ${(error as Error).message}`;
  }
}

/** Partitioned handlers' partitions, owners and depths; a failure to read them never holds the page back (the section hides). */
function loadPartitions(page: Page, seq: number): Promise<void> {
  return api<PartitionsState[]>('partitions').then(
    (handlers) => void (seq === page.state.seq && renderPartitions(handlers)),
    () => renderPartitions(null),
  );
}
