/** Pure formatting for the page: no DOM here, so that jest tests it under Node. */
import type { QueueState } from './api.types.js';

/** A queue depth: -1 means the queue does not exist. */
export const depth = (n: number): string => (n < 0 ? 'missing' : String(n));

/** "in flight": known only for this application's own queues. */
export const optionalCount = (n: number | undefined): string => (n === undefined ? '–' : String(n));

/** A tier's name without its handler queue's prefix: `orders.retry.1.1s.ab12` -> `retry.1.1s.ab12`. */
export const shortTier = (queue: string, tier: string): string => {
  if (!tier.startsWith(`${queue}.`)) return tier;
  const rest = tier.slice(queue.length + 1);
  // `retry.<n>.<delay>.<schedule id>`: the delay is what an operator reads ("1s"); the full name stays in the title.
  return /^retry\.\d+\.([^.]+)\.[0-9a-z]+$/.exec(rest)?.[1] ?? rest;
};

/** A duration for the console: "850 ms", "1.2 s", "42 s", "3 min", "2 h". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}

/** How long ago, for the outbox's oldest waiting message: "850 ms", "42 s", "3 min". */
export const age = (ms: number): string => (ms < 1000 ? `${ms} ms` : ms < 120_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`);

/** "1 message", "2 messages". */
export const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The first 160 characters of a body, or what a binary one is. */
export function preview(item: { body: string; bodyEncoding: 'utf8' | 'base64'; bodyBytes?: number; bodyTruncated?: boolean }): string {
  if (item.bodyEncoding === 'base64') return `(binary body, ${item.bodyBytes ?? Math.floor((item.body.length * 3) / 4)} bytes)`;
  return item.body.length > 160 || item.bodyTruncated === true ? `${item.body.slice(0, 160)}…` : item.body;
}

/**
 * What the list says of a body it holds only the start of (the list carries at most 16 KiB of each): its size, and
 * where it is whole. Empty for a body the list holds whole.
 */
export function bodyCutNote(item: { bodyBytes?: number; bodyTruncated?: boolean }): string {
  if (item.bodyTruncated !== true) return '';
  return `Body of ${bytes(item.bodyBytes ?? 0)}, cut in this list: Details shows it whole, Export downloads it whole.`;
}

/** A size: "512 bytes", "16 KiB", "20.5 MiB". */
export function bytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KiB`;
  return `${Math.round((n / 1024 / 1024) * 10) / 10} MiB`;
}

/** A rate per minute for a chart's label: "12/min", "0.5/min", "0/min"; "–" before there are two readings. */
export function formatRate(perMinute: number | undefined): string {
  if (perMinute === undefined || !Number.isFinite(perMinute)) return '–';
  if (perMinute === 0) return '0/min';
  if (perMinute >= 100) return `${Math.round(perMinute)}/min`;
  if (perMinute >= 10) return `${Math.round(perMinute * 10) / 10}/min`;
  return `${Math.round(perMinute * 100) / 100}/min`;
}

/** JSON for a pre block, two-space indented; anything JSON cannot write as it is. */
export function json(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/**
 * A message's headers as rows to show: strings as they are, so that a stack (`x-exception-stack`) shows its real line
 * breaks instead of the `\n` escapes JSON would write; anything else as JSON. The library's own headers first.
 */
export function headerRows(headers: Record<string, unknown>): { name: string; value: string; multiline: boolean }[] {
  const names = Object.keys(headers).sort((a, b) => Number(!a.startsWith('x-')) - Number(!b.startsWith('x-')) || a.localeCompare(b));
  return names.map((name) => {
    const value = headers[name];
    const text = typeof value === 'string' ? value : json(value);
    return { name, value: text, multiline: text.includes('\n') };
  });
}

/** The query string of an API call: empty values left out. */
export function query(params: Record<string, string | number | undefined>): string {
  const parts = Object.entries(params)
    .filter(([, value]) => value !== undefined && value !== '')
    .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`);
  return parts.length > 0 ? `?${parts.join('&')}` : '';
}

/** A date for a `datetime-local` input, in the browser's time zone. */
export function toLocalInput(iso: string): string {
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * The State column: a feature's word on the queue when it gives one (`state`: "paused", "breaker open"), else whether
 * anything consumes it. Kept in one place so that a feature adding states changes only the API's `state` field.
 */
export function stateOf(q: Pick<QueueState, 'state' | 'consumers'>): { text: string; tone: 'ok' | 'warn' | 'none' } {
  if (q.state) return { text: q.state, tone: 'warn' };
  if (q.consumers === undefined) return { text: '–', tone: 'none' };
  if (q.consumers === 0) return { text: 'no consumer', tone: 'warn' };
  return { text: `consuming (${q.consumers})`, tone: 'ok' };
}
