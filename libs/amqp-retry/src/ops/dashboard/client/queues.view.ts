import type { QueueCounts, QueueState } from './api.types.js';
import { clear, el, nameNode, svg } from './dom.helpers.js';
import { addReading, averageRate, ratesPerMinute, sparkPoints, type Reading } from './rate.series.js';
import { depth, formatRate, optionalCount, shortTier, stateOf } from './view.format.js';

const CHART_WIDTH = 96;
const CHART_HEIGHT = 22;
const OUTCOMES: readonly (keyof QueueCounts)[] = ['handled', 'retried', 'parked'];

/** The readings of each queue's counts while the page is open: the charts' data. */
export class RateHistory {
  private readonly readings = new Map<string, Reading[]>();

  /** Adds this reading of every queue that reports counts (the application's own). */
  add(queues: readonly QueueState[], at: number): void {
    for (const q of queues) {
      if (q.activity) this.readings.set(q.queue, addReading(this.readings.get(q.queue) ?? [], { at, counts: q.activity }));
    }
  }

  of(queue: string): Reading[] {
    return this.readings.get(queue) ?? [];
  }
}

/** Three small charts (handled, retried, parked per minute over the window) with the average rate of each. */
function rateCharts(readings: readonly Reading[]): HTMLElement {
  if (readings.length === 0) return el('span', { className: 'muted', text: '–', title: "Rates are known for this application's own queues" });
  const points = ratesPerMinute(readings);
  return el(
    'ul',
    { className: 'rates' },
    OUTCOMES.map((key) => {
      const line = sparkPoints(
        points.map((p) => ({ from: p.from, at: p.at, value: p[key] })),
        CHART_WIDTH,
        CHART_HEIGHT,
      );
      const rate = formatRate(averageRate(readings, key));
      return el('li', { className: `rate rate-${key}`, 'data-rate': key, title: `${key} per minute while this page is open` }, [
        svg(
          'svg',
          { 'data-chart': key, viewBox: `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`, width: CHART_WIDTH, height: CHART_HEIGHT, 'aria-hidden': 'true' },
          [svg('polyline', { points: line, fill: 'none', 'stroke-width': 1.5 })],
        ),
        el('span', { className: 'rate-label', text: `${key} ` }),
        el('span', { className: 'rate-value', text: rate }),
      ]);
    }),
  );
}

/** The handler queues' table: state, depths, tiers, parked and the rates. */
export function renderHandlerQueues(
  body: HTMLTableSectionElement,
  queues: readonly QueueState[],
  chosen: string | undefined,
  history: RateHistory,
  choose: (queue: string) => void,
): void {
  clear(body);
  if (queues.length === 0) body.appendChild(el('tr', {}, [el('td', { colspan: 7, text: 'No handler queue found yet.' })]));
  for (const q of queues) {
    const tiers = el(
      'ul',
      { className: 'tiers' },
      q.tiers.map((t) =>
        el('li', { title: t.queue }, [
          el('span', { className: 'tier-name', text: shortTier(q.queue, t.queue) }),
          ' ',
          el('span', { className: 'count', text: depth(t.messages) }),
        ]),
      ),
    );
    const state = stateOf(q);
    const isChosen = q.queue === chosen;
    body.appendChild(
      el('tr', { 'data-queue': q.queue, className: isChosen ? 'chosen' : undefined, 'aria-current': isChosen ? 'true' : undefined }, [
        el('th', { scope: 'row', 'data-label': 'Handler queue' }, [
          el('button', { type: 'button', className: 'link', onclick: () => choose(q.queue) }, [nameNode(q.queue)]),
        ]),
        el('td', { 'data-label': 'State', 'data-slot': 'state' }, [el('span', { className: `state state-${state.tone}`, text: state.text })]),
        el('td', { className: 'num', 'data-label': 'Ready', 'data-col': 'ready', text: depth(q.messages) }),
        el('td', { className: 'num', 'data-label': 'In flight', 'data-col': 'in-flight', text: optionalCount(q.inFlight) }),
        el('td', { 'data-label': 'Waiting in tiers', 'data-col': 'tiers' }, [tiers]),
        el('td', { className: `num parked${q.parked > 0 ? ' hot' : ''}`, 'data-label': 'Parked', 'data-col': 'parked', text: depth(q.parked) }),
        el('td', { 'data-label': 'Last 10 minutes', 'data-col': 'rates' }, [rateCharts(history.of(q.queue))]),
      ]),
    );
  }
}

/** The delay ladders' ready queues: not handler queues (only the forwarder consumes them), shown apart. */
export function renderLadders(
  section: HTMLElement,
  body: HTMLTableSectionElement,
  ladders: readonly QueueState[],
  choose: (queue: string) => void,
): void {
  clear(body);
  section.hidden = ladders.length === 0;
  for (const q of ladders) {
    const state = stateOf(q);
    body.appendChild(
      el('tr', { 'data-ladder': q.queue }, [
        el('th', { scope: 'row', 'data-label': 'Ready queue' }, [
          el('button', { type: 'button', className: 'link', text: q.queue, onclick: () => choose(q.queue) }),
        ]),
        el('td', { 'data-label': 'State' }, [el('span', { className: `state state-${state.tone}`, text: state.text })]),
        el('td', { className: 'num', 'data-label': 'Due, not yet forwarded', text: depth(q.messages) }),
        el('td', { className: 'num', 'data-label': 'In flight', text: optionalCount(q.inFlight) }),
        el('td', { className: `num parked${q.parked > 0 ? ' hot' : ''}`, 'data-label': 'Parked (undeliverable)', text: depth(q.parked) }),
      ]),
    );
  }
}
