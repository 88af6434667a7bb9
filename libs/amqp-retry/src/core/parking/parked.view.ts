import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import type { Message, MessageProperties, Options } from 'amqplib';
import type { ParkedFilter, ParkedMessageView, ParkedSummary } from './parked-messages.types.js';
import { maskCredentials } from '../text/credentials.mask.js';
import { headersOf, republishProperties } from '../message/message.properties.js';
import { BROKER_DEATH_HEADERS, truncateUtf8 } from './parked-message.headers.js';
import { ParkedHeader } from '../headers/header.names.js';
import { DELIVERY_COUNT_HEADERS } from '../delivery/delivery.count.js';
import { FailureGroupTally, groupKeyOf } from './failure.groups.js';

/** A quorum queue's delivery counters: browsing a parking queue raises them, so a view, an id and a replay leave them out. */
export const BROWSE_COUNT_HEADERS: readonly string[] = DELIVERY_COUNT_HEADERS;

/** The headers the library writes on a parked copy: a replayed copy starts without them, but for REPLAY_ROUTE_HEADERS. */
export const PARKING_HEADERS: readonly string[] = Object.values(ParkedHeader).filter((name) => name !== ParkedHeader.replayedAt);

/** Parking headers a replayed copy keeps: its first route and queue, which its delivery by name does not tell (see replayedRoute). */
export const REPLAY_ROUTE_HEADERS: readonly string[] = [ParkedHeader.originalExchange, ParkedHeader.originalRoutingKey, ParkedHeader.originalQueue];

/** A parked message as read from the broker. */
export type ParkedDelivery = Pick<Message, 'content' | 'properties'>;

const text = (value: unknown): string => (typeof value === 'string' ? value : Buffer.isBuffer(value) ? value.toString('utf8') : '');

/** A value JSON can carry: Buffers as base64, bigints as decimal strings, Dates as ISO strings, the rest as is. */
export function jsonSafe(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return value.toString('base64');
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? String(value) : value.toISOString();
  if (Array.isArray(value)) return value.map(jsonSafe);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonSafe(v)]));
  return value;
}

/** The headers that identify a message: all but those a browse raises. */
function identityHeaders(properties: MessageProperties): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headersOf(properties)).filter(([key]) => !BROWSE_COUNT_HEADERS.includes(key)));
}

/**
 * A parked message's id: its `x-parked-id`, else (a copy parked without one) `h-` and a digest of the body and the
 * properties but the browse counters, the same from one browse to the next. Not the message id: publishers reuse it.
 * Two copies byte for byte alike may share a digest id, which is harmless: either may stand for the other.
 */
export function parkedIdOf({ content, properties }: ParkedDelivery): string {
  const own = headersOf(properties)[ParkedHeader.id];
  if (typeof own === 'string' && own.length > 0) return own;
  const { headers: _headers, ...rest } = properties;
  const digest = createHash('sha256')
    .update(content)
    .update(JSON.stringify(jsonSafe({ ...rest, headers: identityHeaders(properties) })))
    .digest('hex');
  return `h-${digest.slice(0, 24)}`;
}

/** The headers with the exception texts masked: a copy parked by another tool may hold a `user:password@`. */
function maskedExceptionHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const masked = { ...headers };
  for (const key of [ParkedHeader.exceptionMessage, ParkedHeader.exceptionStack]) {
    if (typeof masked[key] === 'string' || Buffer.isBuffer(masked[key])) masked[key] = maskCredentials(text(masked[key]));
  }
  return masked;
}

/**
 * How an operator sees a parked message. `fallbackQueue` is the queue it failed in when its headers do not say, for a
 * copy the library parked (`x-parked-reason`, which every version writes) only: a message put there some other way (a
 * business message in a queue named as a parking queue) is no handler queue's, and no replay takes it there.
 */
export function toParkedView(delivery: ParkedDelivery, errorQueue: string, fallbackQueue = ''): ParkedMessageView {
  const { content, properties } = delivery;
  const headers = identityHeaders(properties);
  const utf8 = isUtf8(content);
  const { headers: _headers, ...rest } = properties;
  const attempts = headers[ParkedHeader.retryAttempts];
  const history = headers[ParkedHeader.deathHistory];
  const parkedAt = new Date(text(headers[ParkedHeader.parkedAt]));
  return {
    id: parkedIdOf(delivery),
    queue: text(headers[ParkedHeader.originalQueue]) || (headers[ParkedHeader.reason] === undefined ? '' : fallbackQueue),
    errorQueue,
    reason: text(headers[ParkedHeader.reason]),
    error: maskCredentials(text(headers[ParkedHeader.exceptionMessage])),
    parkedAt: Number.isNaN(parkedAt.getTime()) ? undefined : parkedAt,
    attempts: typeof attempts === 'number' ? attempts : undefined,
    body: content.toString(utf8 ? 'utf8' : 'base64'),
    bodyEncoding: utf8 ? 'utf8' : 'base64',
    properties: jsonSafe(Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined))) as Record<string, unknown>,
    headers: jsonSafe(maskedExceptionHeaders(headers)) as Record<string, unknown>,
    deaths: history === undefined ? [] : (jsonSafe(Array.isArray(history) ? history : [history]) as unknown[]),
  };
}

/**
 * The view with its body cut to at most `maxBytes` bytes of the original: a UTF-8 body at a character boundary, a
 * binary one at a whole base64 group. Says the whole size (`bodyBytes`) and whether it was cut (`bodyTruncated`).
 */
export function withBodyPreview(view: ParkedMessageView, maxBytes: number): ParkedMessageView {
  const max = Math.max(0, Math.floor(maxBytes));
  const bodyBytes = Buffer.byteLength(view.body, view.bodyEncoding);
  if (bodyBytes <= max) return { ...view, bodyBytes, bodyTruncated: false };
  return {
    ...view,
    body: view.bodyEncoding === 'utf8' ? truncateUtf8(view.body, max, '') : view.body.slice(0, Math.floor(max / 3) * 4),
    bodyBytes,
    bodyTruncated: true,
  };
}

const contains = (haystack: string, needle: string) => haystack.toLowerCase().includes(needle.toLowerCase());

/** Whether a view matches every field the filter sets. */
export function matchesFilter(view: ParkedMessageView, filter: ParkedFilter = {}): boolean {
  if (filter.queue !== undefined && view.queue !== filter.queue) return false;
  if (filter.reason !== undefined && view.reason !== filter.reason) return false;
  if (filter.error !== undefined && !contains(view.error, filter.error)) return false;
  if (filter.since !== undefined && (view.parkedAt === undefined || view.parkedAt < filter.since)) return false;
  if (filter.until !== undefined && (view.parkedAt === undefined || view.parkedAt >= filter.until)) return false;
  if (filter.text !== undefined && (view.bodyEncoding !== 'utf8' || !contains(view.body, filter.text))) return false;
  if (filter.messageId !== undefined && view.properties.messageId !== filter.messageId) return false;
  if (filter.correlationId !== undefined && view.properties.correlationId !== filter.correlationId) return false;
  if (filter.group !== undefined && groupKeyOf(view) !== filter.group) return false;
  return true;
}

/** Distinct exception messages a summary counts apart; the rest are counted together as OTHER_ERRORS. */
export const MAX_COUNTED_ERRORS = 1_000;
export const OTHER_ERRORS = '(other exception messages)';

const largestFirst = (counts: Map<string, number>): Array<[string, number]> => [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));

/**
 * A summary counted one message at a time, so that a walk of a parking queue of any size keeps counts, not messages:
 * by reason, by exception message (at most MAX_COUNTED_ERRORS of them), and with `withGroups` the failure groups and
 * the oldest park.
 */
export class ParkedTally {
  private total = 0;
  private readonly reasons = new Map<string, number>();
  private readonly errors = new Map<string, number>();
  private readonly groups?: FailureGroupTally;
  private oldestParkedAt?: Date;

  constructor(withGroups = false) {
    if (withGroups) this.groups = new FailureGroupTally();
  }

  add(view: ParkedMessageView): void {
    this.total++;
    this.reasons.set(view.reason, (this.reasons.get(view.reason) ?? 0) + 1);
    const error = this.errors.has(view.error) || this.errors.size < MAX_COUNTED_ERRORS ? view.error : OTHER_ERRORS;
    this.errors.set(error, (this.errors.get(error) ?? 0) + 1);
    if (!this.groups) return;
    this.groups.add(view);
    if (view.parkedAt && (!this.oldestParkedAt || view.parkedAt < this.oldestParkedAt)) this.oldestParkedAt = view.parkedAt;
  }

  summary(): ParkedSummary {
    const summary: ParkedSummary = {
      total: this.total,
      byReason: largestFirst(this.reasons).map(([reason, count]) => ({ reason, count })),
      byError: largestFirst(this.errors).map(([error, count]) => ({ error, count })),
    };
    if (!this.groups) return summary;
    return { ...summary, groups: this.groups.largest(), ...(this.oldestParkedAt && { oldestParkedAt: this.oldestParkedAt }) };
  }
}

/** Where and when a copy is replayed, and the content type of an edited body. */
export interface ReplayTarget {
  /** The queue the copy is published to by name: the one it failed in. */
  queue: string;
  now: Date;
  contentType?: string;
}

/**
 * The properties of a replayed copy: the original properties and the user's headers, without the parking headers
 * (but REPLAY_ROUTE_HEADERS) and the broker's counters, so that its attempts count from one again; `x-replayed-at` says
 * when. Neither `expiration` (it would have lapsed) nor `userId` (the broker refuses another user's) is restored.
 */
export function replayPublishOptions(properties: MessageProperties, target: ReplayTarget): Options.Publish {
  const kept = new Set(REPLAY_ROUTE_HEADERS);
  const dropped = new Set([...PARKING_HEADERS.filter((key) => !kept.has(key)), ...BROKER_DEATH_HEADERS, ...BROWSE_COUNT_HEADERS]);
  const headers = Object.fromEntries(Object.entries(headersOf(properties)).filter(([key]) => !dropped.has(key)));
  const options = republishProperties(properties, {
    ...headers,
    [ParkedHeader.originalQueue]: target.queue,
    [ParkedHeader.replayedAt]: target.now.toISOString(),
  });
  return target.contentType === undefined ? options : { ...options, contentType: target.contentType };
}

/** One JSON line of an export (no newline). */
export const toJsonLine = (view: ParkedMessageView): string => JSON.stringify(view);
