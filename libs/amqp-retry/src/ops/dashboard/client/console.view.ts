/**
 * The console's views from the instances' heartbeats: the summary strip, the instances, and each queue's last hour.
 * Every time is shown against the serving instance's clock (`now` of its answer), so that the page has one clock.
 */
import type { BreakerCause, FleetInstance, FleetState, HistoryPoint, HistoryState } from './api.types.js';
import { clear, el, nameNode, svg } from './dom.helpers.js';
import { duration } from './view.format.js';

const CHART_WIDTH = 240;
const CHART_HEIGHT = 36;
const OUTCOMES = ['handled', 'retried', 'parked', 'failed'] as const;

/** "12:03:04" in the browser's time zone: the one way the console writes a time. */
export const clock = (at: number): string => new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });

/** An open breaker's why, in a line: the failures that opened it, when, its failed trials and its next one. */
export function breakerLine(queue: string, cause: BreakerCause, now: number): string {
  const trials = cause.failedTrials === 0 ? 'no trial yet' : `${cause.failedTrials} failed trial${cause.failedTrials === 1 ? '' : 's'}`;
  const next = cause.nextTrialAt === undefined ? '' : `; next trial ${cause.nextTrialAt <= now ? 'now' : `in ${duration(cause.nextTrialAt - now)} (${clock(cause.nextTrialAt)})`}`;
  const error = cause.error ? `, last error: ${cause.error}` : '';
  return `${queue}: opened ${duration(Math.max(0, now - cause.openedAt))} ago (${clock(cause.openedAt)}): ${cause.reason}${error}; ${trials}${next}`;
}

/** One item of the strip: a label, a figure, and a tone when something is wrong. */
function stripItem(key: string, label: string, value: string | Node[], bad: boolean, title?: string): HTMLElement {
  const shown = typeof value === 'string' ? el('span', { className: 'strip-value', text: value }) : el('span', { className: 'strip-value' }, value);
  return el('li', { className: `strip-item${bad ? ' bad' : ''}`, 'data-strip': key, title }, [el('span', { className: 'strip-label', text: label }), shown]);
}

/** The summary strip: instances up and gone, breakers open, queues paused, parked in the last hour, oldest parked, slowest queue. */
export function renderStrip(list: HTMLElement, fleet: FleetState, oldestParkedMs: number | undefined): void {
  const { summary } = fleet;
  clear(list);
  list.append(
    stripItem('instances', 'Instances', `${summary.up} up${summary.gone > 0 ? ` · ${summary.gone} gone` : ''}`, summary.gone > 0 || summary.up === 0),
    stripItem('breakers', 'Breakers open', String(summary.breakersOpen.length), summary.breakersOpen.length > 0, summary.breakersOpen.join(', ') || undefined),
    stripItem('paused', 'Queues paused', String(summary.paused.length), summary.paused.length > 0, summary.paused.join(', ') || undefined),
    stripItem('parked', 'Parked, last hour', String(summary.parkedLastHour), summary.parkedLastHour > 0),
    stripItem('oldest', 'Oldest parked', oldestParkedMs === undefined ? '–' : duration(oldestParkedMs), oldestParkedMs !== undefined),
    stripItem(
      'slowest',
      'Slowest queue (p95)',
      summary.slowest ? [nameNode(summary.slowest.queue), document.createTextNode(` ${duration(summary.slowest.p95)}`)] : '–',
      false,
      'the highest 95th-percentile processing time over the last hour',
    ),
  );
}

/** The instances: identity, version, up or gone (since when), last beat, what each consumes, and why a breaker is open. */
export function renderInstances(body: HTMLTableSectionElement, note: HTMLElement, fleet: FleetState): void {
  clear(body);
  note.textContent = `Each instance beats every ${duration(fleet.intervalMs)}; one that misses ${fleet.missedBeats} beats shows as gone (within ${duration(fleet.missedBeats * fleet.intervalMs)} of its last one), and is forgotten an hour after it.`;
  if (fleet.instances.length === 0) body.appendChild(el('tr', {}, [el('td', { colspan: 5, text: 'No heartbeat received yet.' })]));
  for (const instance of fleet.instances) body.appendChild(instanceRow(instance, fleet.now));
}

function instanceRow(instance: FleetInstance, now: number): HTMLTableRowElement {
  const up = instance.status === 'up';
  const status = up ? `up since ${clock(instance.firstSeen)}` : `gone since ${clock(instance.goneAt ?? instance.lastSeen)}`;
  const consumed = instance.queues.filter((q) => q.consuming);
  const causes = instance.queues.flatMap((q) => (q.breaker ? [breakerLine(q.queue, q.breaker, now)] : []));
  return el('tr', { 'data-instance': instance.id, className: up ? undefined : 'gone' }, [
    el('th', { scope: 'row', 'data-label': 'Instance' }, [
      el('span', { className: 'name', text: `${instance.host} pid ${instance.pid}`, title: instance.id }),
      instance.version ? el('span', { className: 'muted', text: ` v${instance.version}` }) : null,
    ]),
    el('td', { 'data-label': 'Status', 'data-col': 'status' }, [el('span', { className: `state state-${up ? 'ok' : 'bad'}`, text: status })]),
    el('td', { 'data-label': 'Last beat', 'data-col': 'last-seen', text: `${duration(Math.max(0, now - instance.lastSeen))} ago` }),
    el(
      'td',
      { 'data-label': 'Consumes', 'data-col': 'queues' },
      consumed.length === 0
        ? ['nothing']
        : [
            el(
              'ul',
              { className: 'names' },
              consumed.map((q) =>
                el('li', {}, [
                  nameNode(q.queue),
                  q.partitions && q.partitions.length > 0 ? ` (partitions ${q.partitions.join(', ')})` : '',
                  q.state === 'running' ? '' : ` · ${q.state}`,
                ]),
              ),
            ),
          ],
    ),
    el('td', { 'data-label': 'Breakers', 'data-col': 'breakers' }, causes.length === 0 ? ['–'] : causes.map((line) => el('p', { className: 'cause', text: line }))),
  ]);
}

/** Sums and the highest percentile of a queue's hour. */
function hourOf(points: readonly HistoryPoint[]) {
  const sum = (key: (typeof OUTCOMES)[number]) => points.reduce((n, p) => n + p[key], 0);
  const worst = (pick: (p: HistoryPoint) => number | undefined) => points.reduce<number | undefined>((m, p) => (pick(p) === undefined ? m : Math.max(m ?? 0, pick(p) as number)), undefined);
  return {
    handled: sum('handled'),
    retried: sum('retried'),
    parked: sum('parked'),
    failed: sum('failed'),
    processingP95: worst((p) => p.processing?.p95),
    criticalP95: worst((p) => p.critical?.p95),
  };
}

/** One chart per queue: a line per outcome, one point a minute, the newest at the right. */
function hourChart(points: readonly HistoryPoint[]): SVGSVGElement {
  const max = Math.max(1, ...points.flatMap((p) => OUTCOMES.map((k) => p[k])));
  const step = points.length > 1 ? CHART_WIDTH / (points.length - 1) : CHART_WIDTH;
  const line = (key: (typeof OUTCOMES)[number]) =>
    points.map((p, i) => `${Math.round(i * step * 10) / 10},${Math.round((CHART_HEIGHT - (p[key] / max) * CHART_HEIGHT) * 10) / 10}`).join(' ');
  return svg('svg', { className: 'hour', 'data-chart': 'hour', viewBox: `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': 'messages per minute, last hour' }, [
    ...OUTCOMES.map((key) => svg('polyline', { className: `line-${key}`, 'data-chart': key, points: line(key), fill: 'none', 'stroke-width': 1.5 })),
  ]);
}

/** The last hour per queue: the chart, the hour's counts, and the worst minute's p95 processing and critical time. */
export function renderHistory(body: HTMLTableSectionElement, history: HistoryState): void {
  clear(body);
  if (history.queues.length === 0) body.appendChild(el('tr', {}, [el('td', { colspan: 4, text: 'Nothing handled in the last hour.' })]));
  for (const { queue, points } of history.queues) {
    const hour = hourOf(points);
    body.appendChild(
      el('tr', { 'data-history': queue }, [
        el('th', { scope: 'row', 'data-label': 'Queue' }, [nameNode(queue)]),
        el('td', { 'data-label': 'Per minute, last hour', 'data-col': 'chart' }, [hourChart(points)]),
        el('td', { 'data-label': 'Last hour', 'data-col': 'counts' }, [
          el('ul', { className: 'legend' }, OUTCOMES.map((key) => el('li', { className: `key-${key}`, 'data-count': key, text: `${hour[key]} ${key}` }))),
        ]),
        el('td', { 'data-label': 'p95 (worst minute)', 'data-col': 'timing' }, [
          el('span', { 'data-timing': 'processing', text: `processing ${hour.processingP95 === undefined ? '–' : duration(hour.processingP95)}` }),
          el('br'),
          el('span', { 'data-timing': 'critical', text: `critical ${hour.criticalP95 === undefined ? '–' : duration(hour.criticalP95)}` }),
        ]),
      ]),
    );
  }
}
