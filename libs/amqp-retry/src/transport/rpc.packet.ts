import { errorMessage } from '../core/text/error-message.format.js';

/** Out-of-band values a Nest client's dispatch hook attached to a packet (`ClientProxy.setOnDispatchHook`: a trace id, a tenant). */
export type PacketMetadata = Record<string, unknown>;

/**
 * What a delivery on the transport's queue asks for: Nest's RMQ envelope, `{ pattern, data }` for an event and
 * `{ pattern, data, id }` for a request, each with the `metadata` a client's dispatch hook added; a body without it
 * is an event named by its routing key.
 */
export type InboundPacket =
  | { kind: 'event'; pattern: string; data: unknown; metadata?: PacketMetadata }
  | { kind: 'request'; pattern: string; data: unknown; id: RequestId; replyTo: string; correlationId: string; metadata?: PacketMetadata };

/** A request's envelope id: Nest's clients write a string; a number, as other clients write it, is echoed back as it came. */
export type RequestId = string | number;

const isRequestId = (id: unknown): id is RequestId => (typeof id === 'string' && id.length > 0) || (typeof id === 'number' && Number.isFinite(id));

/** The keys Nest's ClientRMQ writes: `pattern`, `data`, a request's `id`, and the `metadata` of Nest 12's dispatch hook. */
const ENVELOPE_KEYS = new Set(['pattern', 'data', 'id', 'metadata']);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);

/**
 * True for Nest's envelope: an object with a `pattern` and no keys but `pattern`, `data`, `id` and `metadata` (an
 * object, as Nest's dispatch hook sets it), `data` absent when it was undefined. Nest's own server takes any body with
 * a `pattern` or a `data` for one; this rule is narrower so that a business payload with a `pattern` or `data` field
 * among others stays a payload. One with only those keys is read as an envelope: give it another key.
 */
function isEnvelope(body: unknown): body is { pattern: unknown; data?: unknown; id?: unknown; metadata?: PacketMetadata } {
  if (!isRecord(body)) return false;
  const keys = Object.keys(body);
  if (!keys.includes('pattern') || !keys.every((k) => ENVELOPE_KEYS.has(k))) return false;
  return body.metadata === undefined || isRecord(body.metadata);
}

/**
 * Nest's string form of a pattern, as Nest 11+'s `Server.getPatternAsString` reads a pattern (Nest 10's Server lacks
 * that method): a pattern that JSON.stringify cannot serialize (nested too deep) becomes a key no handler has.
 */
export function patternAsString(pattern: unknown): string {
  if (typeof pattern === 'string') return pattern;
  try {
    return JSON.stringify(pattern);
  } catch {
    return '<unserializable pattern>';
  }
}

/**
 * Reads a delivery's packet. A request needs an envelope `id` (a string, or a number as some clients write it) and a
 * `replyTo` property; with only one of them it is an event (nobody could receive a reply). The correlation id is the `correlationId` property, else the envelope id.
 */
export function readPacket(
  body: unknown,
  delivery: { routingKey: string; replyTo?: unknown; correlationId?: unknown },
  patternText: (pattern: unknown) => string,
): InboundPacket {
  if (!isEnvelope(body)) return { kind: 'event', pattern: delivery.routingKey, data: body };
  const pattern = patternText(body.pattern);
  const { id } = body;
  const replyTo = typeof delivery.replyTo === 'string' && delivery.replyTo.length > 0 ? delivery.replyTo : undefined;
  let packet: InboundPacket;
  if (isRequestId(id) && replyTo !== undefined) {
    const correlationId = typeof delivery.correlationId === 'string' && delivery.correlationId.length > 0 ? delivery.correlationId : String(id);
    packet = { kind: 'request', pattern, data: body.data, id, replyTo, correlationId };
  } else packet = { kind: 'event', pattern, data: body.data };
  if (body.metadata !== undefined) packet.metadata = body.metadata;
  return packet;
}

/** A reply as Nest's RMQ transport writes and reads it: a value, an error, and the end of the stream (`isDisposed`). */
export type ReplyPacket = { err?: unknown; response?: unknown; isDisposed?: boolean };

/** Reads a reply's body: JSON text of an object, else a disposing error naming what was wrong with it. */
export function readReply(content: Buffer): ReplyPacket {
  let reply: unknown;
  try {
    reply = JSON.parse(content.toString('utf8'));
  } catch (error) {
    return { err: new Error(`RetryClient.send: an unreadable reply: ${errorMessage(error)}`), isDisposed: true };
  }
  if (typeof reply === 'object' && reply !== null && !Array.isArray(reply)) return reply as ReplyPacket;
  return { err: new Error('RetryClient.send: a reply that is not a Nest packet (a JSON object)'), isDisposed: true };
}
