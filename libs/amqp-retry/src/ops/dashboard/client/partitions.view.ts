import type { PartitionsState } from './api.types.js';
import { byId, clear, el } from './dom.helpers.js';

type Partition = PartitionsState['partitions'][number];

/** A member's id as the page shows it: its first 8 characters (the whole id is in the cell's title and data-owner). */
export const shortMember = (member: string): string => member.slice(0, 8);

/** Who owns a partition, in words: this instance (consuming, or waiting for the previous owner to let go), another one, or nobody yet. */
export function ownerText(p: Partition): string {
  if (!p.owner) return 'not assigned yet';
  if (p.mine) return p.consuming ? 'this instance' : 'this instance (taking over)';
  return `instance ${shortMember(p.owner)}`;
}

/** The Partitions section: hidden when the application has no partitioned handler (or the list could not be read). */
export function renderPartitions(handlers: readonly PartitionsState[] | null): void {
  const section = byId('partitions-section');
  section.hidden = !handlers || handlers.length === 0;
  if (!handlers || section.hidden) return;
  const list = byId('partitions');
  clear(list);
  for (const h of handlers) {
    const rows = h.partitions.map((p) =>
      el('tr', { 'data-partition-queue': p.queue, 'data-owner': p.owner ?? '', 'data-mine': String(p.mine) }, [
        el('th', { scope: 'row', 'data-label': 'Partition queue', text: p.queue }),
        el('td', { className: p.owner ? undefined : 'parked hot', 'data-label': 'Owner', title: p.owner ?? '', text: ownerText(p) }),
        el('td', { className: 'num', 'data-label': 'Ready', 'data-depth': '', text: p.depth === undefined ? '–' : String(p.depth) }),
        el('td', { className: 'num', 'data-label': 'Consumers', text: p.consumers === undefined ? '–' : String(p.consumers) }),
      ]),
    );
    list.appendChild(
      el('div', { className: 'partitioned', 'data-handler-queue': h.queue }, [
        el('h3', { text: h.queue }),
        el('p', {
          className: 'hint',
          text: `${h.partitions.length} partitions over ${h.members.length} instance${h.members.length === 1 ? '' : 's'}; this one is ${shortMember(h.member)}.`,
        }),
        el('div', { className: 'table-wrap' }, [
          el('table', {}, [
            el('thead', {}, [
              el('tr', {}, [
                el('th', { text: 'Partition queue' }),
                el('th', { text: 'Owner' }),
                el('th', { className: 'num', text: 'Ready' }),
                el('th', { className: 'num', text: 'Consumers' }),
              ]),
            ]),
            el('tbody', {}, rows),
          ]),
        ]),
      ]),
    );
  }
}
