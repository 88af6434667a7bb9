/**
 * The parked-messages page's script: built by scripts/build-client.mjs into one file served from the page's own route,
 * so that the CSP can forbid inline scripts. Message data reaches the DOM only as text (see dom.helpers.ts).
 *
 * This entry wires the parts: the page's state (page.state.ts), its reads and auto-refresh (page.refresh.ts), the
 * filter form (filter.form.ts), the search (search.view.ts), the actions on parked messages (message.actions.ts) and
 * a message's detail dialog (message.detail.ts).
 */
import { byId } from './dom.helpers.js';
import { applyFilter, formFilter } from './filter.form.js';
import { bySelection, byFilter, exportFiltered } from './message.actions.js';
import { openDetail, wireDetail } from './message.detail.js';
import { createState, PAGE_SIZE, REFRESH_MS, type Page } from './page.state.js';
import { load, setLive, tick } from './page.refresh.js';
import { RateHistory } from './queues.view.js';
import { search } from './search.view.js';

const page: Page = { state: createState(), history: new RateHistory(), load: (quiet) => load(page, quiet) };
const { state } = page;

// The script runs: the notice that says what to do when it cannot (see BOOT_STYLE) goes.
const boot = document.getElementById('boot');
if (boot) boot.hidden = true;

const on = (id: string, listener: (event: Event) => void) => byId(id).addEventListener('click', listener);

document.addEventListener('DOMContentLoaded', () => {
  on('refresh', () => void load(page));
  on('auto-refresh', () => setLive(page, !state.live));
  byId('filter').addEventListener('submit', (event) => {
    event.preventDefault();
    void applyFilter(page, formFilter(event.target as HTMLFormElement));
  });
  on('clear-filter', () => void applyFilter(page, {}));
  byId('search').addEventListener('submit', (event) => {
    event.preventDefault();
    const id = byId<HTMLInputElement>('search-id').value.trim();
    if (id) void search(id, (item) => void openDetail(page, item.errorQueue, item.id));
  });
  on('prev', () => {
    state.offset = Math.max(0, state.offset - PAGE_SIZE);
    void load(page);
  });
  on('next', () => {
    state.offset += PAGE_SIZE;
    void load(page);
  });
  on('replay-selected', () => void bySelection(page, 'Replayed', 'replay'));
  on('purge-selected', () => void bySelection(page, 'Purged', 'purge'));
  on('replay-filtered', () => void byFilter(page, 'Replayed', 'replay'));
  on('purge-filtered', () => void byFilter(page, 'Purged', 'purge'));
  on('export-filtered', () => void exportFiltered(page));
  wireDetail(page, on);
  setInterval(() => void tick(page), REFRESH_MS);
  setLive(page, true, false);
  void load(page);
});
