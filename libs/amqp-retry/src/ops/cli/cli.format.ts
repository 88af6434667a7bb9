import type { HandlerQueueState, ParkedMessageView, ParkedPage, ParkedSummary } from '../../core/parking/parked-messages.types.js';
import { clip, printable } from './cli.input.js';

const line = (text: string, max: number) => clip(printable(text), max);
const depth = (n: number) => (n < 0 ? 'missing' : String(n));

/** The handler queues, one per line: queue, depth, tiers, parking queue and its depth. */
export function formatQueues(states: readonly HandlerQueueState[]): string {
  if (states.length === 0) return 'No handler queue recorded on this broker (start a handler, or name one with --queue).';
  return states
    .map((s) =>
      s.role === 'delay-ladder'
        ? `${printable(s.queue)} (delay ladder): ${depth(s.messages)} due, parked ${depth(s.parked)} (undeliverable) in ${printable(s.errorQueue)}`
        : `${printable(s.queue)}: ${depth(s.messages)} ready, tiers ${s.tiers.map((t) => depth(t.messages)).join('/') || '-'}, ` +
          `parked ${depth(s.parked)} in ${printable(s.errorQueue)}`,
    )
    .join('\n');
}

export function formatSummary(summary: ParkedSummary): string {
  return [
    `${summary.total} parked`,
    'By reason:',
    ...summary.byReason.map((r) => `  ${String(r.count).padStart(6)}  ${line(r.reason || '(no reason)', 60)}`),
    'By error:',
    ...summary.byError.map((e) => `  ${String(e.count).padStart(6)}  ${line(e.error || '(no message)', 100)}`),
  ].join('\n');
}

/** One line per message: id, parked at, reason, error, body. */
export function formatPage(page: ParkedPage, offset: number): string {
  const from = page.items.length === 0 ? 0 : offset + 1;
  const header = `${page.total} matching; showing ${from}-${offset + page.items.length}`;
  const rows = page.items.map(
    (v) =>
      `${line(v.id, 40).padEnd(38)}  ${v.parkedAt?.toISOString() ?? '-'.padEnd(24)}  ${line(v.reason, 16).padEnd(14)}  ${line(v.error, 50).padEnd(50)}  ${line(v.bodyEncoding === 'utf8' ? v.body : `<base64> ${v.body}`, 60)}`,
  );
  return [header, ...rows].join('\n');
}

/** Every field of one message; the body as it is (control characters escaped). */
export function formatView(view: ParkedMessageView): string {
  return [
    `id:          ${printable(view.id)}`,
    `queue:       ${printable(view.queue) || '(unknown)'}`,
    `error queue: ${printable(view.errorQueue)}`,
    `reason:      ${printable(view.reason)}`,
    `error:       ${printable(view.error)}`,
    `parked at:   ${view.parkedAt?.toISOString() ?? '-'}`,
    `attempts:    ${view.attempts ?? '-'}`,
    `properties:  ${printable(JSON.stringify(view.properties))}`,
    `headers:     ${printable(JSON.stringify(view.headers, null, 2), true)}`,
    `deaths:      ${printable(JSON.stringify(view.deaths), true)}`,
    `body (${view.bodyEncoding}):`,
    printable(view.body, true),
  ].join('\n');
}
