import { PublishError } from '../../errors/publish.error.js';

/** Why a publish failed for good, with the broker's reply code when it closed the channel over it. */
export interface PublishFailure {
  reason: string;
  code?: number;
}

/** A channel close as far as it concerns publishes: the exchange it names, if any. */
export interface ChannelClose {
  reason?: string;
  code?: number;
  /** The exchange the broker refused (404 no such exchange, 403 access refused), when the reason names one. */
  exchange?: string;
  /** The broker's max_message_size, when it closed the channel over a larger message (406 "message size N is larger..."). */
  maxMessageSize?: number;
}

/**
 * Reads a channel-close reason: RabbitMQ names the exchange of a publish to a missing or forbidden one (`NOT_FOUND - no
 * exchange 'x' in vhost '/'`, `ACCESS_REFUSED - access to exchange 'x' in vhost '/' refused for user 'u'`).
 */
export function classifyChannelClose(reason: string | undefined, code: number | undefined): ChannelClose {
  const named = reason?.match(/(?:no exchange|access to exchange) '((?:[^']|'(?! in vhost))*)' in vhost/);
  const tooLarge = reason?.match(/message size \d+ is larger than (?:configured )?max size (\d+)/);
  return { reason, code, exchange: named?.[1], ...(tooLarge && { maxMessageSize: Number(tooLarge[1]) }) };
}

/** Fail the publish (with why, and the broker's code), or send it again. */
export type CloseOutcome = { action: 'fail'; reason: string; code?: number } | { action: 'resend' };

/**
 * What a publish whose channel closed before its confirm does: it fails when the close names its own exchange, or its
 * `size` is over the broker's limit too (a re-send would be refused alike); else it is sent again (at least once).
 */
export function publishOutcomeAfterClose(close: ChannelClose, exchange: string, size = 0): CloseOutcome {
  const ownExchange = close.exchange !== undefined && close.exchange === exchange;
  const tooLarge = close.maxMessageSize !== undefined && size > close.maxMessageSize;
  if (ownExchange || tooLarge) return { action: 'fail', reason: `the broker closed the channel over it (${close.reason})`, code: close.code };
  return { action: 'resend' };
}

/** Why a mandatory publish failed when the broker returned it: the one wording, written and recognised here. */
export const UNROUTABLE_REASON = 'no queue is bound to receive it (returned as unroutable)';

/** True when a publish failed because its target queue or exchange is missing (returned, or a 404). */
export const isMissingTarget = (error: unknown): boolean =>
  error instanceof PublishError && (error.brokerCode === 404 || error.message.endsWith(UNROUTABLE_REASON));
