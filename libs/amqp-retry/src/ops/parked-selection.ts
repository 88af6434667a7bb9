import { errorMessage } from '../core/text/error-message.format.js';
import { matchesFilter } from '../core/parking/parked.view.js';
import { ParkedHeader } from '../core/headers/header.names.js';
import type { ParkedMessageView, ParkedSelection, ReplayResult } from '../core/parking/parked-messages.types.js';
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

/** The most bytes AMQP allows in a queue name (a routing key). */
const MAX_NAME_BYTES = 255;

/**
 * Why a copy could not even be sent (amqplib could not encode it): for a queue name too long to exist, what to do
 * with a message that no replay can deliver.
 */
export function unsendable(queue: string, error?: unknown): string {
  const bytes = Buffer.byteLength(queue);
  if (tooLongForAQueue(queue)) {
    return `the queue it failed in (x-original-queue) is ${bytes} bytes long, more than the ${MAX_NAME_BYTES} a queue name may have, so no copy can be sent; the message stays parked: export it by its id to keep it, then purge it by its id`;
  }
  return `the copy could not be sent (${errorMessage(error)}); the message stays parked`;
}

/** Whether no queue can have this name, so that no copy can be sent to it. */
export const tooLongForAQueue = (queue: string): boolean => Buffer.byteLength(queue) > MAX_NAME_BYTES;

/** Why a replayed copy left its message parked. */
export function replayProblem(outcome: Exclude<Outcome, 'routed'>, queue: string, error: unknown): string {
  if (outcome === 'returned') return missingTarget(queue);
  if (outcome === 'nacked') return `the broker refused the copy: ${errorMessage(error)}`;
  if (outcome === 'unsent') return unsendable(queue, error);
  return 'unconfirmed (its channel closed before the broker confirmed it; it may have been delivered)';
}

/** The first `shown` ids (each as `format` writes it), and how many more there are. */
export const someIds = (ids: readonly string[], shown: number, format = (id: string) => id): string =>
  ids.slice(0, shown).map(format).join(', ') + (ids.length > shown ? `, and ${ids.length - shown} more` : '');

/** The most ids a ReplayStoppedError names in its message. */
const SHOWN_IDS = 20;

/**
 * A replay that stopped part-way (its channel or connection closed, the broker refused a publish): what it did before,
 * kept (`partial`) and said, the copies whose confirm did not come named first, as they may have been delivered.
 */
export class ReplayStoppedError extends Error {
  constructor(
    readonly errorQueue: string,
    readonly partial: ReplayResult,
    cause: unknown,
  ) {
    const unconfirmed = partial.failed.filter((failure) => failure.error === replayProblem('unconfirmed', '', undefined)).map((f) => f.id);
    const others = partial.failed.filter((failure) => !unconfirmed.includes(failure.id)).map((f) => f.id);
    super(
      `The replay of "${errorQueue}" stopped after ${partial.replayed} of ${partial.matched} matching message(s) were replayed (their parked messages removed): ${errorMessage(cause)}.` +
        (unconfirmed.length > 0
          ? ` ${unconfirmed.length} copy(ies) were sent but not confirmed, so may have been delivered; their messages stay parked (check their queue before replaying them again): ${someIds(unconfirmed, SHOWN_IDS)}.`
          : '') +
        (others.length > 0 ? ` ${others.length} left parked as they could not be replayed: ${someIds(others, SHOWN_IDS)}.` : '') +
        ' The rest were not touched and stay parked.',
      { cause },
    );
    this.name = 'ReplayStoppedError';
  }
}

/**
 * The messages of a parking queue that queues out of the view's scope share: only those that failed in one of
 * `owners` (see ParkedView.sharedParkingOwners); every one when there are no others.
 */
export async function* ownedBy(messages: AsyncGenerator<BrowsedMessage>, owners: ReadonlySet<string> | undefined): AsyncGenerator<BrowsedMessage> {
  for await (const browsed of messages) if (owners === undefined || owners.has(browsed.view.queue)) yield browsed;
}

/**
 * The messages with their queue checked as a replay's target (`problemOf`, see ParkedView.replayTargets): one whose
 * `x-original-queue` names a queue a replay may not go to is shown with no queue (it is no queue's in view) and
 * `unreplayable` saying why, so that it is neither listed under that queue nor replayed there.
 */
export async function* targeted(
  messages: AsyncGenerator<BrowsedMessage>,
  problemOf: (queue: string) => string | undefined,
): AsyncGenerator<BrowsedMessage> {
  for await (const browsed of messages) {
    const problem = browsed.view.queue === '' ? undefined : problemOf(browsed.view.queue);
    if (problem !== undefined) browsed.view = { ...browsed.view, queue: '', unreplayable: problem };
    yield browsed;
  }
}

/** Whether a message carries the header the library parks every copy with (an unrecorded queue's may not). */
export const parkedByLibrary = ({ message }: BrowsedMessage): boolean => message.properties.headers?.[ParkedHeader.reason] !== undefined;

/** The reason a change refuses a queue nothing records as a parking queue that holds a message the library did not park. */
export const FOREIGN_MESSAGES = `a queue no handler records as its parking queue, holding a message amqp-retry did not park (no ${ParkedHeader.reason} header)`;

/**
 * The messages of a queue nothing records as a parking queue that a change may act on: those the library parked; one
 * parked elsewhere is left alone (given back with the walk's channel).
 */
export async function* parkedOnly(messages: AsyncGenerator<BrowsedMessage>): AsyncGenerator<BrowsedMessage> {
  for await (const browsed of messages) if (parkedByLibrary(browsed)) yield browsed;
}

export function selected(view: ParkedMessageView, selection: ParkedSelection): boolean {
  if (selection.ids !== undefined && !selection.ids.includes(view.id)) return false;
  return matchesFilter(view, selection.filter ?? {});
}
