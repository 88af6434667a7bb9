/**
 * A parked message's detail dialog: its facts, timeline, body, properties, headers and deaths, and its own Replay,
 * Purge, and Edit then replay.
 */
import type { MessageView } from './api.types.js';
import { api } from './api.client.js';
import { byId, clear, el } from './dom.helpers.js';
import { renderTimeline, timelineOf } from './groups.view.js';
import { purgeOne, replayEdited, replayOne } from './message.actions.js';
import type { Page } from './page.state.js';
import { status } from './status.view.js';
import { headerRows, json } from './view.format.js';

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

/** Reads the message and shows it in the detail dialog. */
export async function openDetail(page: Page, errorQueue: string, id: string): Promise<void> {
  try {
    const item = await api<MessageView>(`messages/${encodeURIComponent(errorQueue)}/${encodeURIComponent(id)}`);
    page.state.detail = item;
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

function closeDetail(): void {
  const dialog = byId<HTMLDialogElement>('detail');
  if (dialog.open) dialog.close();
}

/** The detail dialog's buttons: Close, Replay, Purge, Edit (a UTF-8 body), and Send the edited body. */
export function wireDetail(page: Page, on: (id: string, listener: (event: Event) => void) => void): void {
  const { state } = page;
  on('detail-close', closeDetail);
  on('detail-replay', () => {
    const d = state.detail;
    closeDetail();
    if (d) void replayOne(page, d);
  });
  on('detail-purge', () => {
    const d = state.detail;
    closeDetail();
    if (d) void purgeOne(page, d);
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
    if (d) void replayEdited(page, d, body);
  });
}
