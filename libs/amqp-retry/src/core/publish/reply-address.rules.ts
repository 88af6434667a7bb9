/**
 * Where a request's reply goes. A `mandatory` publish to a direct reply-to address says nothing about the caller
 * (3.10 and 4.0 deliver it and return it as unroutable either way; 4.3 never returns it: docs/design.md), but a
 * passive declare of the address fails with 404 once the caller's channel is gone (3.10, 4.0, 4.3).
 */

/** The pseudo-queue of direct reply-to: a channel consuming from it gets the replies to its requests. */
export const DIRECT_REPLY_QUEUE = 'amq.rabbitmq.reply-to';
export const DIRECT_REPLY_PREFIX = `${DIRECT_REPLY_QUEUE}.`;

/** True for an address handed out by direct reply-to. */
export const isDirectReplyAddress = (replyTo: string): boolean => replyTo.startsWith(DIRECT_REPLY_PREFIX);

/** How to reply to `replyTo`: `mandatory` where a return means "no queue took it", else `probe` whether the caller is there. */
export function replyRoute(replyTo: string): { mandatory: boolean; probe: boolean } {
  const direct = isDirectReplyAddress(replyTo);
  return { mandatory: !direct, probe: direct };
}

/** Erlang's external term format, as far as a pid goes: the version byte, the two pid tags, the four atom tags. */
const TERM_VERSION = 131;
const NEW_PID_EXT = 88;
const PID_EXT = 103;
/** Atom tags and the size of their length field: ATOM_EXT, SMALL_ATOM_EXT, ATOM_UTF8_EXT, SMALL_ATOM_UTF8_EXT. */
const ATOM_LENGTH_BYTES: Readonly<Record<number, number>> = { 100: 2, 115: 1, 118: 2, 119: 1 };
/** What follows a pid's node atom: ID, serial (4 bytes each) and creation (4 bytes in NEW_PID_EXT, 1 in PID_EXT). */
const PID_TAIL_BYTES: Readonly<Record<number, number>> = { [NEW_PID_EXT]: 12, [PID_EXT]: 9 };

/** Base64 as RabbitMQ writes it (standard alphabet, padded), and only that: Node's decoder skips what it cannot read. */
const isCanonicalBase64 = (text: string): boolean => text.length > 0 && Buffer.from(text, 'base64').toString('base64') === text;

/**
 * Why `address` cannot be a direct reply-to address RabbitMQ handed out (`amq.rabbitmq.reply-to.<pid>.<key>`, an
 * Erlang pid term and a key in base64, observed on 3.10.8 and 4.3.6), or undefined. The broker closes the whole
 * connection (541) that asks about or publishes to an address it cannot decode, so such an address is refused before
 * any I/O; a well-formed one naming no node still does, hence the probe's connection of its own.
 */
export function directReplyAddressProblem(address: string): string | undefined {
  const parts = address.slice(DIRECT_REPLY_PREFIX.length).split('.');
  if (!isDirectReplyAddress(address) || parts.length !== 2) return `not of the form ${DIRECT_REPLY_PREFIX}<pid>.<key>`;
  const [pid, key] = parts;
  if (!isCanonicalBase64(pid) || !isCanonicalBase64(key)) return 'its pid or key is not base64';
  const term = Buffer.from(pid, 'base64');
  const tail: number | undefined = PID_TAIL_BYTES[term[1]];
  const lengthBytes: number | undefined = ATOM_LENGTH_BYTES[term[2]];
  if (term[0] !== TERM_VERSION || tail === undefined || lengthBytes === undefined || term.length < 3 + lengthBytes)
    return 'its pid is not an Erlang process id';
  const atomLength = lengthBytes === 1 ? term[3] : term.readUInt16BE(3);
  if (term.length !== 3 + lengthBytes + atomLength + tail) return 'its pid is not an Erlang process id';
  return undefined;
}

/**
 * Why a publish through the default exchange to `routingKey` must not go, or undefined. An address RabbitMQ could not
 * decode closes the whole publishing connection (541), failing every publish in flight on it, again at each resend; a
 * delayed message cannot wait for one at all: the address lives only as long as its requester's channel, and checking
 * it before the wait would ask the broker about it on that same connection.
 */
export function replyTargetProblem(exchange: string, routingKey: string, delayed: boolean): string | undefined {
  if (exchange !== '' || !isDirectReplyAddress(routingKey)) return undefined;
  if (delayed) return `"${routingKey}" is a direct reply-to address, which lives only as long as its requester's channel: reply without a delay`;
  const problem = directReplyAddressProblem(routingKey);
  return problem && `"${routingKey}" is no direct reply-to address RabbitMQ hands out (${problem}): reply to a request's replyTo as it arrived`;
}

/** RabbitMQ's INTERNAL_ERROR: the connection close a direct reply-to address it cannot decode causes. */
const INTERNAL_ERROR = 541;

/**
 * What the failure of one passive declare of a direct reply-to address says, from the probe channel's close code
 * (404: gone) or the connection's (`lossCode`; none for a lost socket). Probes run one at a time, so the broker
 * answered the one in flight. 'refused': closed over this address; 'again': lost for another reason, probe again.
 */
export function probeFailure(channelCode: number | undefined, lossCode: number | undefined): 'gone' | 'refused' | 'again' {
  if (channelCode === 404) return 'gone';
  if (channelCode !== undefined || lossCode === INTERNAL_ERROR) return 'refused';
  return 'again';
}

/** What the library knows of a direct reply-to address before it replies to it (engine/reply-address.checker.ts). */
export type ReplyAddressState =
  | { kind: 'exists' }
  | { kind: 'gone' }
  /** The broker closed the probe's channel or connection over it, or its form is not one the broker hands out. */
  | { kind: 'refused'; reason: string }
  /** The broker could not be asked (no connection within the wait, or the server is closing). */
  | { kind: 'unknown'; reason: string };
