import { RetryConfigError } from '../../errors/retry-config.error.js';
import { QueueArgument } from '../headers/header.names.js';
import type { QueueType } from '../topology/topology.types.js';
import { POSITIVE_TIME_LIMIT_RANGE, readDuration, readInteger, showValue } from './config.readers.js';
import type { Duration } from '../time/duration.reader.js';

/** What a full queue does with one more message (RabbitMQ's `x-overflow`). */
export type QueueOverflow = 'drop-head' | 'reject-publish' | 'reject-publish-dlx';

/** What happens to a message that expired in the handler's queue or was pushed out of it by its length limit. */
export type DeadLetterAction = 'park' | 'drop';

/** The limits and arguments of a handler's own queue, as the options of `@RetryWithBackoff` give them. */
export interface QueueLimitsOptions {
  /**
   * At most this many messages ready in the queue (`x-max-length`); what happens to one more is `overflow`'s. Default
   * none.
   */
  maxLength?: number;
  /** At most this many bytes of message bodies ready in the queue (`x-max-length-bytes`). Default none. */
  maxLengthBytes?: number;
  /**
   * What a full queue does with one more message (`x-overflow`): 'drop-head' (RabbitMQ's default: the oldest leaves
   * and is parked with reason `maxlen`), 'reject-publish' (the broker refuses the new one: `RetryPublisher.publish`
   * rejects), 'reject-publish-dlx' (the new one is refused and parked with reason `maxlen`). A quorum queue takes
   * only 'reject-publish' (its at-least-once dead-lettering needs it) and 'drop-head' is refused there. Needs
   * `maxLength` or `maxLengthBytes`.
   */
  overflow?: QueueOverflow;
  /**
   * How long a message may wait in the queue before it expires (`x-message-ttl`), e.g. '10m'; an expired message is
   * parked with reason `expired` (or dropped, `onExpired`). Default none.
   */
  messageTtl?: Duration;
  /** Declares a priority queue (`x-max-priority`, 1 to 255; RabbitMQ advises at most 10): higher `priority` first. Classic queues only. */
  maxPriority?: number;
  /**
   * What happens to a message that expired in the queue (its own `expiration`, or `messageTtl`) or was pushed out by
   * a length limit: 'park' (default: parked with reason `expired` or `maxlen`, its original expiration and death
   * history kept) or 'drop' (acked, counted in the `dropped` observer event and the metrics, and logged at most once a
   * minute per queue with the count).
   */
  onExpired?: DeadLetterAction;
}

/** QueueLimitsOptions after validation. */
export type QueueLimitsConfig = ReturnType<typeof readQueueLimits>;

const OVERFLOWS: readonly QueueOverflow[] = ['drop-head', 'reject-publish', 'reject-publish-dlx'];
/** RabbitMQ's limits are signed 32-bit integers on the wire (`long`). */
const MAX_LIMIT = 2 ** 31 - 1;

/**
 * Validates a handler's queue limits. `at(key)` names the option as the user wrote it. Throws RetryConfigError.
 * @example readQueueLimits({ maxLength: 1000, overflow: 'reject-publish' }, 'classic', (k) => k) // { maxLength: 1000, overflow: 'reject-publish', onExpired: 'park' }
 */
export function readQueueLimits(options: QueueLimitsOptions, queueType: QueueType, at: (key: string) => string) {
  const maxLength = options.maxLength === undefined ? undefined : readInteger(options.maxLength, at('maxLength'), 1, MAX_LIMIT, '10000');
  const maxLengthBytes =
    options.maxLengthBytes === undefined ? undefined : readInteger(options.maxLengthBytes, at('maxLengthBytes'), 1, MAX_LIMIT, '104857600');
  const overflow = readOverflow(options.overflow, queueType, maxLength ?? maxLengthBytes, at);
  const messageTtlMs =
    options.messageTtl === undefined ? undefined : readDuration(options.messageTtl, at('messageTtl'), "'10m'", POSITIVE_TIME_LIMIT_RANGE);
  const maxPriority = options.maxPriority === undefined ? undefined : readInteger(options.maxPriority, at('maxPriority'), 1, 255, '10');
  if (maxPriority !== undefined && queueType === 'quorum') {
    throw new RetryConfigError(
      at('maxPriority'),
      'is given for a quorum queue',
      'Quorum queues take no x-max-priority (RabbitMQ 4.0+ gives them two priorities of their own: priority above 4 goes first). Leave maxPriority out, or use a classic queue.',
    );
  }
  const onExpired = options.onExpired ?? 'park';
  if (onExpired !== 'park' && onExpired !== 'drop') {
    throw new RetryConfigError(at('onExpired'), `is ${showValue(onExpired)}`, "Use 'park' (the default) or 'drop'.");
  }
  return { maxLength, maxLengthBytes, overflow, messageTtlMs, maxPriority, onExpired };
}

function readOverflow(value: unknown, queueType: QueueType, limit: number | undefined, at: (key: string) => string): QueueOverflow | undefined {
  if (value === undefined) return undefined;
  if (!OVERFLOWS.includes(value as QueueOverflow)) {
    throw new RetryConfigError(at('overflow'), `is ${showValue(value)}`, `Use one of ${OVERFLOWS.map((o) => `'${o}'`).join(', ')}.`);
  }
  if (limit === undefined) {
    throw new RetryConfigError(at('overflow'), 'is given without a limit', 'Give maxLength or maxLengthBytes with it, or leave overflow out.');
  }
  if (queueType === 'quorum' && value !== 'reject-publish') {
    throw new RetryConfigError(
      at('overflow'),
      `is '${String(value)}' for a quorum queue`,
      "A quorum queue dead-letters at least once only with 'reject-publish' (the library's choice for it): use overflow: 'reject-publish', or leave it out.",
    );
  }
  return value as QueueOverflow;
}

/** The queue arguments of these limits, for the handler's own queue (the quorum overflow is the topology's own). */
export function queueLimitArguments(limits: QueueLimitsConfig | undefined): Record<string, unknown> {
  if (!limits) return {};
  return {
    ...(limits.maxLength !== undefined ? { [QueueArgument.maxLength]: limits.maxLength } : {}),
    ...(limits.maxLengthBytes !== undefined ? { [QueueArgument.maxLengthBytes]: limits.maxLengthBytes } : {}),
    ...(limits.overflow !== undefined ? { [QueueArgument.overflow]: limits.overflow } : {}),
    ...(limits.messageTtlMs !== undefined ? { [QueueArgument.messageTtl]: limits.messageTtlMs } : {}),
    ...(limits.maxPriority !== undefined ? { [QueueArgument.maxPriority]: limits.maxPriority } : {}),
  };
}

/**
 * What a start warns of for these limits: the cases where the broker, not the library, may drop a message that has
 * been retried (docs/retries-and-parking.md, "Expired and over-length messages"). Empty when nothing to say.
 */
export function queueLimitWarnings(queue: string, limits: QueueLimitsConfig | undefined, queueType: QueueType): string[] {
  if (!limits) return [];
  const warnings: string[] = [];
  const limited = limits.maxLength !== undefined || limits.maxLengthBytes !== undefined;
  if (limited && queueType === 'classic' && (limits.overflow === 'reject-publish' || limits.overflow === 'reject-publish-dlx')) {
    warnings.push(
      `"${queue}": a classic queue with overflow '${limits.overflow}' refuses a retry that comes back from its tier while the queue is full, and the broker then drops it (classic queues dead-letter at most once); a quorum queue takes it: use queueType: 'quorum' if retries must survive a full queue`,
    );
  }
  if (limits.messageTtlMs !== undefined || (limited && limits.overflow !== 'reject-publish')) {
    warnings.push(
      `"${queue}": a message that has been retried and then expires in the queue or is pushed out of it goes on to its next tier, and the broker's dead-letter cycle rule drops it on its way back; first deliveries are parked as expired or maxlen`,
    );
  }
  return warnings;
}
