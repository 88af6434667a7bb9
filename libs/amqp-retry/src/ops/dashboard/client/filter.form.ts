/** The filter form: its queue choices, the filter shown in its fields, and a filter applied from it or from a click elsewhere. */
import type { Filter, QueueState } from './api.types.js';
import { byId, clear, el } from './dom.helpers.js';
import { filterFromFields, type Page, type PageState } from './page.state.js';
import { depth, toLocalInput } from './view.format.js';

/** The queue field's choices: every queue with its parked count, the chosen one kept. */
export function renderQueueOptions(queues: readonly QueueState[], chosen: string | undefined): void {
  const select = byId<HTMLSelectElement>('f-queue');
  const current = chosen ?? '';
  clear(select);
  select.appendChild(el('option', { value: '', text: 'All queues' }));
  for (const q of queues) {
    const label = q.role === 'delay-ladder' ? `${q.queue} (delay ladder, ${depth(q.parked)} parked)` : `${q.queue} (${depth(q.parked)} parked)`;
    select.appendChild(el('option', { value: q.queue, text: label }));
  }
  select.value = current;
}

/** The form's fields say the state's filter. */
export function syncForm(state: Pick<PageState, 'filter'>): void {
  const form = byId<HTMLFormElement>('filter');
  const field = (name: string) => form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement;
  const { filter } = state;
  field('errorQueue').value = filter.queue ?? '';
  for (const key of ['reason', 'error', 'text'] as const) field(key).value = filter[key] ?? '';
  for (const key of ['since', 'until'] as const) field(key).value = filter[key] ? toLocalInput(filter[key] as string) : '';
}

/** Shows the first page of what `filter` matches, with nothing selected. */
export function applyFilter(page: Page, filter: Filter): Promise<void> {
  const { state } = page;
  state.filter = filter;
  state.offset = 0;
  state.selected.clear();
  state.chosen = true;
  syncForm(state);
  return page.load();
}

/** The filter the submitted form says. */
export function formFilter(form: HTMLFormElement): Filter {
  return filterFromFields((name) => (form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement).value);
}
