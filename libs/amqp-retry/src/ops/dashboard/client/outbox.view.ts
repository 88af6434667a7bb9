import { byId, clear, el } from './dom.helpers.js';
import { age } from './view.format.js';

/** The outbox's backlog as `api/outbox` answers it: `{ configured: false }` without an outbox. */
export interface OutboxState {
  configured: boolean;
  table?: string;
  waiting?: number;
  oldestAgeMs?: number;
  parked?: number;
  /** This instance's relay, when it runs one. */
  relay?: { relaying: boolean; problem?: string };
}

/** The outbox's table beside the queues: hidden without an outbox, or when it could not be read. */
export function renderOutbox(outbox: OutboxState | null): void {
  const section = byId('outbox-section');
  section.hidden = !outbox || !outbox.configured;
  if (!outbox || section.hidden) return;
  const body = byId<HTMLTableElement>('outbox').tBodies[0];
  clear(body);
  const waiting = outbox.waiting ?? 0;
  const parked = outbox.parked ?? 0;
  const relay = !outbox.relay ? 'none here' : outbox.relay.relaying ? 'relaying' : outbox.relay.problem || 'cannot publish';
  body.appendChild(
    el('tr', {}, [
      el('th', { scope: 'row', 'data-label': 'Table', text: outbox.table ?? '' }),
      el('td', { className: 'num', 'data-label': 'Waiting', text: String(waiting) }),
      el('td', { className: 'num', 'data-label': 'Oldest waiting', text: waiting > 0 ? age(outbox.oldestAgeMs ?? 0) : '' }),
      el('td', { className: `num parked${parked > 0 ? ' hot' : ''}`, 'data-label': 'Parked', text: String(parked) }),
      el('td', { className: outbox.relay && !outbox.relay.relaying ? 'parked hot' : undefined, 'data-label': "This instance's relay", text: relay }),
    ]),
  );
}
