/**
 * The parked messages: the list with its checkboxes and per-message buttons, the paging and bulk buttons' state, and
 * the groups by reason and by error that filter it.
 */
import type { MessageView, Summary } from './api.types.js';
import { byId, clear, el } from './dom.helpers.js';
import { listSummary, pageInfo, selectedQueue, selectionKey, type PageState } from './page.state.js';
import { bodyCutNote, preview } from './view.format.js';

/** The groups by reason and by error, each a button that filters the list by it (`choose`). */
export function renderGroups(summary: Summary, choose: (key: 'reason' | 'error', value: string) => void): void {
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
      list.appendChild(
        el('li', {}, [
          el('button', { type: 'button', className: 'group', 'data-group': group.key, title: label, onclick: () => choose(group.key, group.value) }, [
            el('span', { className: 'group-label', text: label }),
            el('span', { className: 'count', text: String(group.count) }),
          ]),
        ]),
      );
    }
  }
}

/** The list of the state's page of messages, its summary and paging; `open` shows a message's detail, `replay` replays it. */
export function renderList(state: PageState, open: (item: MessageView) => void, replay: (item: MessageView) => void): void {
  const list = byId('messages');
  clear(list);
  for (const item of state.items) {
    const key = selectionKey(item);
    const box = el('input', {
      type: 'checkbox',
      'aria-label': `Select message ${item.id}`,
      onchange: (event) => {
        if ((event.target as HTMLInputElement).checked) state.selected.add(key);
        else state.selected.delete(key);
        updateBulk(state);
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
        ...(item.bodyTruncated === true ? [el('p', { className: 'body-cut', text: bodyCutNote(item) })] : []),
        el('div', { className: 'actions' }, [
          el('button', { type: 'button', className: 'open', text: 'Details', onclick: () => open(item) }),
          el('button', { type: 'button', className: 'replay-one', text: 'Replay', onclick: () => replay(item) }),
        ]),
      ]),
    );
  }
  byId('list-summary').textContent = listSummary(state.total, state.offset, state.items.length);
  byId('page-info').textContent = pageInfo(state.total, state.offset);
  byId<HTMLButtonElement>('prev').disabled = state.offset === 0;
  byId<HTMLButtonElement>('next').disabled = state.offset + state.items.length >= state.total;
  updateBulk(state);
}

/** The bulk buttons: those on the selection need one selected, those on the filter one queue chosen and something matching. */
export function updateBulk(state: PageState): void {
  const one = !!selectedQueue(state);
  byId<HTMLButtonElement>('replay-selected').disabled = state.selected.size === 0;
  byId<HTMLButtonElement>('purge-selected').disabled = state.selected.size === 0;
  const hint = one ? '' : 'Choose one queue to act on all matching messages.';
  for (const id of ['replay-filtered', 'purge-filtered', 'export-filtered']) {
    const button = byId<HTMLButtonElement>(id);
    button.disabled = !one || state.total === 0;
    button.title = hint;
  }
}
