import { truncateUtf8, type ParkInput } from './parked-message.headers.js';
import { printable } from '../text/printable.js';

/** Most bytes of the error message in a park's log line: the whole of it is in the parked copy. */
export const MAX_LOGGED_ERROR_BYTES = 1024;

/** What a park's log line names. */
export interface ParkLogFacts extends Pick<ParkInput, 'queue' | 'reason' | 'handlerCalls'> {
  errorQueue: string;
  /** The delivery's `messageId`, if it had one. */
  messageId?: unknown;
  /** The parked copy's `x-parked-id`: what `amqp-retry parked show` and the page name it by. */
  parkedId?: unknown;
  /** The error's message (masked of credentials by the engine's logger). */
  error: string;
}

/** A value for the line: quoted, on one line, and short (a message id is at most 255 bytes on the wire). */
const quoted = (value: string, maxBytes: number) => JSON.stringify(truncateUtf8(value, maxBytes));

/** Text on one line: every run of whitespace that holds a line break becomes one space. */
const oneLine = (text: string) => text.replace(/\s*[\r\n\u2028\u2029]\s*/g, ' ');

/**
 * The one line a park logs: `Parked a message from "orders" in "orders.error" (non-retryable after 1 attempt,
 * message id "m-7", parked id "5c0f..."): unknown customer`, the error cut at MAX_LOGGED_ERROR_BYTES. Control
 * characters (a body's escape sequences quoted by a parse error) are escaped (printable).
 */
export function parkLogLine(facts: ParkLogFacts): string {
  const { queue, errorQueue, reason, handlerCalls } = facts;
  const messageId = typeof facts.messageId === 'string' && facts.messageId !== '' ? `message id ${quoted(facts.messageId, 255)}` : 'no message id';
  const parkedId = typeof facts.parkedId === 'string' ? `, parked id ${quoted(facts.parkedId, 255)}` : '';
  const attempts = `${handlerCalls} attempt${handlerCalls === 1 ? '' : 's'}`;
  return printable(
    `Parked a message from "${queue}" in "${errorQueue}" (${reason} after ${attempts}, ${messageId}${parkedId}): ${oneLine(truncateUtf8(facts.error, MAX_LOGGED_ERROR_BYTES))}`,
  );
}
