import type { MessageProperties, Options } from 'amqplib';
import type { ParkReason } from '../delivery/delivery.decision.js';
import { errorMessage, errorStack } from '../text/error-message.format.js';
import { encodedHeaderSize, encodedTableSize } from '../headers/field-table.size.js';
import { headersOf, republishProperties } from '../message/message.properties.js';
import { FIRST_FAILURE_HEADERS, firstRoute } from '../delivery/first-failure.headers.js';
import { firstRejection, readDeathHistory, type XDeath } from '../delivery/x-death.parser.js';
import { maskCredentials } from '../text/credentials.mask.js';
import { BrokerHeader, ParkedHeader } from '../headers/header.names.js';
import { copyOwn } from '../headers/own-keys.copy.js';

/**
 * Most bytes the parked copy's headers may take (encodedTableSize). amqplib encodes a header table into a 64 KiB
 * scratch buffer, and the content header must fit one frame (frame_max, 128 KiB by default): a copy over either could
 * never be published. 48 KiB leaves the other properties (short strings) far more room than they can use.
 */
export const PARKED_HEADERS_BUDGET = 48 * 1024;

/** Caps of single headers, within the budget; the stack and then the message are cut further when room is short. */
export const MAX_EXCEPTION_MESSAGE_BYTES = 4 * 1024;
export const MAX_EXCEPTION_STACK_BYTES = 16 * 1024;
/** The death history kept under `x-retry-death-history`; a longer one is kept as capped text. */
export const MAX_DEATH_HISTORY_BYTES = 8 * 1024;
/** Room kept for the exception message before original headers are dropped: the first thing an operator reads. */
const MIN_EXCEPTION_MESSAGE_BYTES = 1024;
/** Cap of `x-parked-dropped-headers`. */
const MAX_DROPPED_LIST_BYTES = 1024;
/** Names (exchange, routing key, user id) are shortstrs of at most 255 bytes; a longer value cannot be one. */
const MAX_NAME_BYTES = 255;

/**
 * Headers the broker sets when it dead-letters a message, and a quorum queue's delivery counters. The parked copy must
 * not carry them: attempts are counted from them, so a replayed copy would be parked again at once. The history is
 * kept under `x-retry-death-history` instead.
 */
export const BROKER_DEATH_HEADERS: readonly string[] = [
  ...Object.values(BrokerHeader),
  // Not the broker's, but an attempt counter all the same.
  ...FIRST_FAILURE_HEADERS,
];

/** Parking headers written anew at every park: an earlier park's must not survive into this one's copy. */
const EXCEPTION_HEADERS: readonly string[] = [ParkedHeader.exceptionMessage, ParkedHeader.exceptionStack];

const TRUNCATED = '... [truncated]';

/** Cuts a string to at most `maxBytes` of UTF-8 without splitting a character, ending with `marker` when there is room. */
export function truncateUtf8(text: string, maxBytes: number, marker = TRUNCATED): string {
  // Every UTF-16 unit takes at least one byte, so text shorter than maxBytes units may fit and longer text cannot.
  if (text.length <= maxBytes && Buffer.byteLength(text) <= maxBytes) return text;
  const limit = Math.max(0, Math.floor(maxBytes));
  const mark = Buffer.byteLength(marker) <= limit ? marker : '';
  const bytes = Buffer.from(text.slice(0, limit));
  let end = limit - Buffer.byteLength(mark);
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--; // back off to the start of a character
  return bytes.subarray(0, end).toString('utf8') + mark;
}

/** A JSON-ish text of any value, for operators to read: Buffers and bigints shown, never throws. */
function readableText(value: unknown): string {
  try {
    const text = JSON.stringify(value, function (this: unknown, key: string, item: unknown) {
      const raw = (this as Record<string, unknown>)[key]; // before toJSON: a Buffer is still a Buffer here
      if (Buffer.isBuffer(raw)) return `<${raw.length} bytes>`;
      return typeof item === 'bigint' ? `${item}n` : item;
    });
    if (typeof text === 'string') return text;
  } catch {
    // a cycle or a throwing getter: fall back to the plain description
  }
  return errorMessage(value);
}

/** The value kept under `x-retry-death-history`: `x-death` as it was if valid and within its cap, else its capped text. */
function deathHistoryValue(header: unknown): unknown {
  if (readDeathHistory(header).ok && encodedHeaderSize(ParkedHeader.deathHistory, header) <= MAX_DEATH_HISTORY_BYTES) return header;
  return truncateUtf8(readableText(header), MAX_DEATH_HISTORY_BYTES - encodedHeaderSize(ParkedHeader.deathHistory, ''));
}

/** The `expiration` the message was published with: its own, else the `original-expiration` its x-death kept (rejected entry first). */
function originalExpiration(properties: MessageProperties, deaths: readonly XDeath[], queue: string): string | undefined {
  const own: unknown = properties.expiration; // amqplib types it as any
  if (own !== undefined && own !== null) return String(own);
  return firstRejection(deaths, queue)?.originalExpiration ?? deaths.find((d) => d.originalExpiration !== undefined)?.originalExpiration;
}

export interface ParkInput {
  reason: ParkReason;
  error: unknown;
  /** Handler calls made for this message. */
  handlerCalls: number;
  queue: string;
  deaths: readonly XDeath[];
  /** The delivery's own exchange and routing key (used when the message never failed before). */
  deliveredExchange: string;
  deliveredRoutingKey: string;
  properties: MessageProperties;
  now: Date;
  /** The parked copy's id (`x-parked-id`), unique per park: what operators name it by. */
  id?: string;
}

/**
 * The properties of the parked copy: the original ones without BROKER_DEATH_HEADERS, plus the ParkedHeader headers.
 * Within PARKED_HEADERS_BUDGET, the exception stack is cut first, then the message; when the original headers alone
 * would not fit, the largest are dropped and named in `x-parked-dropped-headers` (headers amqplib cannot encode always
 * are). The copy is persistent, without `expiration` (so that it cannot vanish) or `userId` (the broker rejects
 * another user's): both are kept as headers.
 */
export function parkedPublishOptions(input: ParkInput): Options.Publish {
  const { properties, error } = input;
  const delivered = headersOf(properties);
  const original = firstRoute(delivered, input.deaths, input.queue, { exchange: input.deliveredExchange, routingKey: input.deliveredRoutingKey });
  const own: Record<string, unknown> = {
    [ParkedHeader.reason]: input.reason,
    [ParkedHeader.originalExchange]: truncateUtf8(original.exchange, MAX_NAME_BYTES),
    [ParkedHeader.originalRoutingKey]: truncateUtf8(original.routingKey, MAX_NAME_BYTES),
    [ParkedHeader.retryAttempts]: input.handlerCalls,
    [ParkedHeader.parkedAt]: input.now.toISOString(),
    [ParkedHeader.originalQueue]: truncateUtf8(input.queue, MAX_NAME_BYTES),
  };
  if (input.id !== undefined) own[ParkedHeader.id] = truncateUtf8(input.id, MAX_NAME_BYTES);
  const expiration = originalExpiration(properties, input.deaths, input.queue);
  if (expiration !== undefined) own[ParkedHeader.originalExpiration] = truncateUtf8(expiration, MAX_NAME_BYTES);
  if (properties.userId !== undefined) own[ParkedHeader.originalUserId] = truncateUtf8(String(properties.userId), MAX_NAME_BYTES);
  if (delivered[BrokerHeader.death] !== undefined) own[ParkedHeader.deathHistory] = deathHistoryValue(delivered[BrokerHeader.death]);

  // The error's texts leave the process in the copy (the page, the CLI, the management UI): passwords masked.
  const message = maskCredentials(errorMessage(error));
  const { kept, dropped } = fitOriginals(delivered, own, message);
  if (dropped.length > 0) {
    // A copy parked before (and replayed) may already say what an earlier park dropped: keep that too.
    const before = typeof kept[ParkedHeader.droppedHeaders] === 'string' ? [kept[ParkedHeader.droppedHeaders]] : [];
    delete kept[ParkedHeader.droppedHeaders];
    own[ParkedHeader.droppedHeaders] = truncateUtf8([...before, ...dropped].join(','), MAX_DROPPED_LIST_BYTES);
  }
  // copyOwn, not spreads (docs/performance.md); the same keys win.
  const exception = fitException(PARKED_HEADERS_BUDGET - encodedTableSize(copyOwn(kept, own)), message, maskCredentials(errorStack(error)));
  return republishProperties(properties, copyOwn(kept, exception, own));
}

/**
 * The original headers to keep: all but the broker's death headers and those the parking headers replace, minus,
 * largest first, as many as must go for the rest to leave the exception message MIN_EXCEPTION_MESSAGE_BYTES.
 */
function fitOriginals(delivered: Record<string, unknown>, own: Record<string, unknown>, message: string) {
  const keys = Object.keys(delivered).filter(
    (key) => !BROKER_DEATH_HEADERS.includes(key) && !EXCEPTION_HEADERS.includes(key) && !Object.hasOwn(own, key),
  );
  const sizes = keys.map((key): [string, number] => [key, encodedHeaderSize(key, delivered[key])]);
  const reserve =
    encodedHeaderSize(ParkedHeader.exceptionMessage, truncateUtf8(message, MIN_EXCEPTION_MESSAGE_BYTES)) +
    encodedHeaderSize(ParkedHeader.droppedHeaders, 'x'.repeat(MAX_DROPPED_LIST_BYTES));
  let total = encodedTableSize(own) + sizes.reduce((sum, [, size]) => (Number.isFinite(size) ? sum + size : sum), 0);
  const dropped: string[] = [];
  for (const [key, size] of sizes.sort((a, b) => b[1] - a[1])) {
    // Largest first: what amqplib cannot encode (Infinity) always goes, the rest only while over the budget.
    if (Number.isFinite(size) && total + reserve <= PARKED_HEADERS_BUDGET) break;
    dropped.push(key);
    if (Number.isFinite(size)) total -= size;
  }
  // Object.keys order, as delivered, rather than by size.
  const kept = Object.fromEntries(keys.filter((key) => !dropped.includes(key)).map((key) => [key, delivered[key]]));
  return { kept, dropped };
}

/** The exception headers within `room` bytes: the message first (up to its cap), the stack in what is left. */
function fitException(room: number, message: string, stack: string): Record<string, string> {
  const fit = (key: string, text: string, cap: number, left: number) => truncateUtf8(text, Math.min(cap, left - encodedHeaderSize(key, '')));
  const headers: Record<string, string> = {};
  if (room > encodedHeaderSize(ParkedHeader.exceptionMessage, '')) {
    headers[ParkedHeader.exceptionMessage] = fit(ParkedHeader.exceptionMessage, message, MAX_EXCEPTION_MESSAGE_BYTES, room);
  }
  const left = room - encodedHeaderSize(ParkedHeader.exceptionMessage, headers[ParkedHeader.exceptionMessage]);
  if (left > encodedHeaderSize(ParkedHeader.exceptionStack, '')) {
    headers[ParkedHeader.exceptionStack] = fit(ParkedHeader.exceptionStack, stack, MAX_EXCEPTION_STACK_BYTES, left);
  }
  return headers;
}
