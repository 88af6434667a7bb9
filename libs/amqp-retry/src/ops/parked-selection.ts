import { errorMessage } from '../core/text/error-message.format.js';
import { matchesFilter } from '../core/parking/parked.view.js';
import type { ParkedMessageView, ParkedSelection } from '../core/parking/parked-messages.types.js';
import type { Outcome } from './confirm.window.js';
import type { BrowsedMessage } from './parked-queue.browser.js';

// What ParkedMessages' operations select (the messages a call names, those a view owns), and the words with which they
// answer for a message they could not replay or an export they stopped.

/**
 * How long an export's walk waits for a reader that takes nothing (a download paused, a pipe into a pager): past it,
 * the walk stops and gives every message back, so that the parking queue is neither held from other walks nor its
 * messages kept unacked for as long as the reader stalls.
 */
export const READER_STALL_MS = 10_000;

export const readerStalled = (errorQueue: string) =>
  new Error(
    `The export of "${errorQueue}" stopped: its reader took nothing for ${READER_STALL_MS / 1000} s, so every message was given back to the queue. Export again, reading as you go`,
  );

export const UNKNOWN_TARGET = 'the queue it failed in is unknown (no x-original-queue header, no single handler recorded for this parking queue)';
export const missingTarget = (queue: string) => `the queue "${queue}" does not exist; the message stays parked`;

/** Why a replayed copy left its message parked. */
export function replayProblem(outcome: Exclude<Outcome, 'routed'>, queue: string, error: unknown): string {
  if (outcome === 'returned') return missingTarget(queue);
  if (outcome === 'nacked') return `the broker refused the copy: ${errorMessage(error)}`;
  return 'unconfirmed (its channel closed before the broker confirmed it; it may have been delivered)';
}

/**
 * The messages of a parking queue that queues out of the view's scope share: only those that failed in one of
 * `owners` (see ParkedView.sharedParkingOwners); every one when there are no others.
 */
export async function* ownedBy(messages: AsyncGenerator<BrowsedMessage>, owners: ReadonlySet<string> | undefined): AsyncGenerator<BrowsedMessage> {
  for await (const browsed of messages) if (owners === undefined || owners.has(browsed.view.queue)) yield browsed;
}

export function selected(view: ParkedMessageView, selection: ParkedSelection): boolean {
  if (selection.ids !== undefined && !selection.ids.includes(view.id)) return false;
  return matchesFilter(view, selection.filter ?? {});
}
