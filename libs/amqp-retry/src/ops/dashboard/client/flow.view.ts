import type { FlowState } from './api.types.js';
import { clear, el } from './dom.helpers.js';

/**
 * A queue's consumption in words: its state, then who paused it, since when and why; or until when its breaker keeps
 * it open; a paused queue's circuit when that is not closed; its rate limit. `time` writes an ISO instant for people.
 */
export function flowText(s: FlowState, time: (iso: string, withDate: boolean) => string): string {
  let said: string = s.state;
  if (s.paused) said += ` by ${s.paused.by} since ${time(s.paused.since, true)}${s.paused.reason ? ` (${s.paused.reason})` : ''}`;
  else if (s.openUntil) said += ` until ${time(s.openUntil, false)}`;
  if (s.circuit && s.paused && s.circuit !== 'closed') said += `; circuit ${s.circuit}`;
  if (s.rateLimit) said += `; at most ${s.rateLimit.calls} calls per ${s.rateLimit.per}`;
  return said;
}

const localTime = (iso: string, withDate: boolean): string => (withDate ? new Date(iso).toLocaleString() : new Date(iso).toLocaleTimeString());

/** The "Consumption" list: each handler queue of this application with its state and a Pause or Resume button. */
export function renderFlow(list: HTMLElement, states: readonly FlowState[], change: (kind: 'pause' | 'resume', queue: string) => void): void {
  clear(list);
  if (states.length === 0) list.appendChild(el('li', { text: 'No handler queue of this application can be paused here.' }));
  for (const s of states) {
    const kind = s.paused ? 'resume' : 'pause';
    const button = el('button', { type: 'button', text: s.paused ? 'Resume' : 'Pause', onclick: () => change(kind, s.queue) });
    list.appendChild(
      el('li', { 'data-flow-queue': s.queue, 'data-state': s.state }, [
        el('strong', { text: s.queue }),
        ': ',
        el('span', { className: 'flow-state', text: flowText(s, localTime) }),
        ' ',
        button,
      ]),
    );
  }
}
