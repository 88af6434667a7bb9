import { PublishError } from '../../errors/publish.error.js';
import { errorMessage } from '../text/error-message.format.js';

/** Why a publish failed for good, with the broker's reply code when it closed the channel over it. */
export interface PublishFailure {
  reason: string;
  code?: number;
}

/** A channel close as far as it concerns publishes: the exchange it names, if any. */
export interface ChannelClose {
  reason?: string;
  code?: number;
  /**
   * The exchange the broker refused (404 no such exchange; 403 access refused, an internal exchange, or a topic
   * permission), when the reason names one; '' for the default exchange, which a 403 names 'amq.default' (a 404 naming
   * 'amq.default' is about a publish to an exchange of that name, which does not exist: the default one has none).
   */
  exchange?: string;
  /** With a topic permission's refusal: the routing key refused on `exchange` (other keys may be allowed). */
  routingKey?: string;
  /** The broker's max_message_size, when it closed the channel over a larger message (406 "message size N is larger..."). */
  maxMessageSize?: number;
}

/** A quoted name in a broker's reason, up to the quote before `next` (a name may hold quotes itself). */
const quoted = (next: string) => `'((?:[^']|'(?! ${next}))*)'`;
const NAMED_EXCHANGE = new RegExp(`(?:no exchange|access to exchange|cannot publish to internal exchange) ${quoted('in vhost')} in vhost`);
const TOPIC_REFUSED = new RegExp(`access to topic ${quoted('in exchange')} in exchange ${quoted('in vhost')} in vhost`);

/**
 * Reads a channel-close reason: RabbitMQ names the exchange of a publish to a missing, forbidden or internal one
 * (`NOT_FOUND - no exchange 'x' in vhost '/'`, `ACCESS_REFUSED - access to exchange 'x' in vhost '/' refused for user
 * 'u'`, `ACCESS_REFUSED - cannot publish to internal exchange 'x' in vhost '/'`), and the routing key and exchange of a
 * topic permission's refusal (`ACCESS_REFUSED - write access to topic 'k' in exchange 'x' in vhost '/' refused ...`).
 */
export function classifyChannelClose(reason: string | undefined, code: number | undefined): ChannelClose {
  const topic = reason?.match(TOPIC_REFUSED);
  const exchange = topic?.[2] ?? reason?.match(NAMED_EXCHANGE)?.[1];
  const tooLarge = reason?.match(/message size \d+ is larger than (?:configured )?max size (\d+)/);
  return {
    reason,
    code,
    exchange: exchange === 'amq.default' && code === 403 ? '' : exchange,
    ...(topic && { routingKey: topic[1] }),
    ...(tooLarge && { maxMessageSize: Number(tooLarge[1]) }),
  };
}

/** Fail the publish (with why, and the broker's code), or send it again. */
export type CloseOutcome = { action: 'fail'; reason: string; code?: number } | { action: 'resend' };

/**
 * What a publish whose channel closed before its confirm does: it fails when the close names its own exchange (and,
 * for a topic permission, its routing key), or its `size` is over the broker's limit too (a re-send would be refused
 * alike); else it is sent again (at least once).
 */
export function publishOutcomeAfterClose(close: ChannelClose, exchange: string, size = 0, routingKey?: string): CloseOutcome {
  // A 403 names the default exchange amq.default, and so it names a publish to an exchange of that name: the broker
  // checks the permission before it looks the exchange up.
  const named = close.exchange === exchange || (close.exchange === '' && exchange === 'amq.default');
  const ownExchange = named && (close.routingKey === undefined || close.routingKey === routingKey);
  const tooLarge = close.maxMessageSize !== undefined && size > close.maxMessageSize;
  if (ownExchange || tooLarge) return { action: 'fail', reason: `the broker closed the channel over it (${close.reason})`, code: close.code };
  return { action: 'resend' };
}

/** Why a mandatory publish failed when the broker returned it: the one wording, written and recognised here. */
export const UNROUTABLE_REASON = 'no queue is bound to receive it (returned as unroutable)';

/** True when a publish failed because its target queue or exchange is missing (returned, or a 404). */
export const isMissingTarget = (error: unknown): boolean =>
  error instanceof PublishError && (error.brokerCode === 404 || error.message.endsWith(UNROUTABLE_REASON));

/** Why a publish failed that amqplib refused to encode (a name over 255 bytes, headers it cannot encode): never sendable as it is. */
export const UNSENDABLE_REASON = 'amqplib could not send it';

/**
 * True when a publish can never go through as it is: amqplib refused to encode it (UNSENDABLE_REASON), or the broker
 * refused it (403) for its exchange being internal, which no permission changes.
 */
export const isUnsendable = (error: unknown): boolean =>
  error instanceof PublishError &&
  (error.brokerCode === undefined
    ? error.message.includes(`failed: ${UNSENDABLE_REASON}`)
    : error.brokerCode === 403 && error.message.includes('cannot publish to internal exchange'));

/**
 * Why a send ended when its patience's signal aborted (the delivery it was for is gone, a shutdown): the caller gave up
 * waiting, the broker did not refuse it.
 */
export const abandonedReason = (signal: AbortSignal | undefined): string =>
  `given up before the broker confirmed it (${signal?.reason === undefined ? 'aborted' : errorMessage(signal.reason)}); it may or may not have been delivered`;
