import { NonRetryableError } from '../errors/non-retryable.error.js';
import { errorMessage } from './error-message.js';
import type { ErrorClass } from './retry-options.js';

/**
 * Why a message was parked, as written to `x-parked-reason`: attempts ran out, the error was non-retryable, the
 * body (or, for a delayed message, its target headers) could not be read, or a delayed message's target exchange
 * no longer exists.
 */
export type ParkReason = 'exhausted' | 'non-retryable' | 'malformed' | 'undeliverable' | 'redelivery-limit';

/**
 * A quorum queue counts the deliveries of a message that were never settled (`x-delivery-count`): a handler that
 * crashes its process or channel every time. At this count the message is parked instead of handled again. The
 * queue's own `x-delivery-limit` is set higher (QUORUM_DELIVERY_LIMIT), so the library acts before the broker,
 * which would dead-letter the message into the tiers, from where its return to the queue would be dropped by the
 * dead-letter cycle rule.
 */
export const REDELIVERY_LIMIT = 10;
export const QUORUM_DELIVERY_LIMIT = 2 * REDELIVERY_LIMIT;

/** What happens to a delivery before the handler runs. */
export type BeforeHandling = { action: 'handle'; payload: unknown } | { action: 'park'; reason: ParkReason; error: Error; handlerCalls: number };

/** What happens to a delivery whose handler failed. */
export type AfterFailure = { action: 'retry'; tier: number } | { action: 'park'; reason: ParkReason };

/**
 * Decides whether a delivery reaches the handler. A body that is not JSON is parked as malformed (the handler is
 * never called); a message that has already had every attempt (maxAttempts lowered since it failed) is parked as
 * exhausted rather than called once more; one delivered REDELIVERY_LIMIT times without being settled is parked too.
 */
export function decideBeforeHandling(content: Buffer, attempt: number, maxAttempts: number, unsettledDeliveries = 0): BeforeHandling {
  if (unsettledDeliveries >= REDELIVERY_LIMIT) {
    const error = new Error(`delivered ${unsettledDeliveries} times without being settled: the handler may crash its process`);
    return { action: 'park', reason: 'redelivery-limit', error, handlerCalls: attempt - 1 + unsettledDeliveries };
  }
  if (attempt > maxAttempts) {
    const error = new Error(`already had ${attempt - 1} attempts, and maxAttempts is ${maxAttempts}`);
    return { action: 'park', reason: 'exhausted', error, handlerCalls: attempt - 1 };
  }
  try {
    return { action: 'handle', payload: JSON.parse(content.toString('utf8')) };
  } catch (error) {
    return { action: 'park', reason: 'malformed', error: new Error(`body is not valid JSON: ${errorMessage(error)}`), handlerCalls: 0 };
  }
}

/**
 * Decides between another attempt and parking. `tier` is 1-based: the failure of attempt n waits in tier n, and
 * the last tier repeats.
 */
export function decideAfterFailure(attempt: number, maxAttempts: number, retryable: boolean, tiers: number): AfterFailure {
  if (!retryable) return { action: 'park', reason: 'non-retryable' };
  if (attempt >= maxAttempts) return { action: 'park', reason: 'exhausted' };
  return { action: 'retry', tier: Math.min(attempt, tiers) };
}

/**
 * Builds the retryability test of a handler. NonRetryableError always parks; a predicate that throws counts as
 * "retryable", so a bug in it costs attempts, never a message.
 */
export function retryabilityOf(nonRetryable?: ErrorClass[] | ((error: unknown) => boolean)): (error: unknown) => boolean {
  const matches =
    nonRetryable === undefined
      ? () => false
      : typeof nonRetryable === 'function'
        ? nonRetryable
        : (error: unknown) => nonRetryable.some((errorClass) => error instanceof errorClass);
  return (error) => {
    if (error instanceof NonRetryableError) return false;
    try {
      return !matches(error);
    } catch {
      return true;
    }
  };
}
