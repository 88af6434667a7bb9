/** The search by message id or correlation id across the application's parking queues. */
import type { MessagePage, MessageView } from './api.types.js';
import { api } from './api.client.js';
import { byId, clear, el } from './dom.helpers.js';
import { distinctMessages, PAGE_SIZE } from './page.state.js';
import { plural, query } from './view.format.js';

/** Every parked message of the application's parking queues with this message id or correlation id; `open` shows one. */
export async function search(id: string, open: (item: MessageView) => void): Promise<void> {
  const results = byId('search-results');
  clear(results);
  byId('search-summary').textContent = 'Searching…';
  try {
    const [byMessage, byCorrelation] = await Promise.all([
      api<MessagePage>(`messages${query({ messageId: id, limit: PAGE_SIZE })}`),
      api<MessagePage>(`messages${query({ correlationId: id, limit: PAGE_SIZE })}`),
    ]);
    const items = distinctMessages([...byMessage.items, ...byCorrelation.items]);
    byId('search-summary').textContent =
      items.length === 0 ? `No parked message has the id or correlation id ${id}.` : `${plural(items.length, 'parked message')} found.`;
    for (const item of items) {
      results.appendChild(
        el('li', { className: 'message', 'data-found': item.id }, [
          el('button', {
            type: 'button',
            className: 'link',
            onclick: () => open(item),
            text: `${item.queue || item.errorQueue} · ${item.reason} · ${item.error}`,
          }),
        ]),
      );
    }
  } catch (error) {
    byId('search-summary').textContent = `Could not search: ${(error as Error).message}`;
  }
}
