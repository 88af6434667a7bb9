import { readJsonObject } from '../topology/json-record.reader.js';

/**
 * The note a consumer publishes when it hands a single-active-consumer quorum queue over (a partition moving, a pause,
 * an open circuit, a stop): the messages its closing channel puts back, each with the returns on purpose it has had
 * in all. The broker counts each of those returns in `x-delivery-count` (and 4.3's `x-acquired-count`) exactly as it
 * counts a crash, on 3.10, 4.0 and 4.3 alike, whether the consumer cancels first, nacks with requeue or only closes
 * (docs/rabbitmq-4.md), and nothing of the message can be changed on its way back: so the next owner, another process,
 * learns from this note which of the counted returns were no crash. It travels on CONTROL_EXCHANGE, keyed by the queue.
 */
export const HAND_OVER_NOTE_TYPE = 'amqp-retry.hand-over';

/** Most messages one note names: a hand-over gives back at most a prefetch's worth; more are left counted. */
export const MAX_NOTED_RETURNS = 1_000;

/** Longest identity read from a note (returnIdentity: `id:` and a message id, or a sha256 digest, maybe a replay's time). */
const MAX_IDENTITY_LENGTH = 1_024;

/** One message put back on purpose: its identity (returnIdentity) and its returns on purpose so far, this one included. */
export type NotedReturn = readonly [identity: string, returns: number];

/** A hand-over's note: the queue handed over and what its channel put back. */
export interface HandOverNote {
  queue: string;
  returns: NotedReturn[];
}

/** The note's body: JSON `{ queue, returns: [[identity, count], ...] }`, at most MAX_NOTED_RETURNS of them. */
export const encodeHandOverNote = (note: HandOverNote): Buffer =>
  Buffer.from(JSON.stringify({ queue: note.queue, returns: note.returns.slice(0, MAX_NOTED_RETURNS) }));

/** Reads a note sent with `routingKey`; a problem in words for a body that is not one (it is then ignored). */
export function decodeHandOverNote(content: Buffer, routingKey: string): HandOverNote | { problem: string } {
  const body = readJsonObject(content);
  if ('problem' in body) return body;
  const { queue, returns } = body.fields;
  if (typeof queue !== 'string' || queue !== routingKey) return { problem: 'queue must be the routing key the note was sent with' };
  if (!Array.isArray(returns) || returns.length > MAX_NOTED_RETURNS)
    return { problem: `returns must be a list of at most ${MAX_NOTED_RETURNS} entries` };
  const read: NotedReturn[] = [];
  for (const entry of returns as unknown[]) {
    if (!Array.isArray(entry) || entry.length !== 2) return { problem: 'each return must be [identity, count]' };
    const [identity, count] = entry as unknown[];
    if (typeof identity !== 'string' || identity === '' || identity.length > MAX_IDENTITY_LENGTH)
      return { problem: 'an identity must be a non-empty string' };
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 1) return { problem: 'a count must be a whole number from 1' };
    read.push([identity, count]);
  }
  return { queue, returns: read };
}

/**
 * Whether the return of a delivery left unsettled is one made on purpose, which must not count toward the redelivery
 * limit: the queue was recalled (handed over, paused, its circuit opened) while the delivery was held and its handler
 * had ended, unsettled (it waited for its turn, for its key, or between two attempts in place), so only the hand-over's
 * channel close puts it back. A delivery whose channel was `lost` first (a lost connection, a consumer timeout: the
 * broker took it back, for its own reasons), or whose handler was still `running` when the channel closed (it outlived
 * the hand-over's timeout), is counted as the broker counts it: that may be a crash.
 */
export const returnedOnPurpose = ({ recalled, lost, running }: Record<'recalled' | 'lost' | 'running', boolean>): boolean =>
  recalled && !lost && !running;
