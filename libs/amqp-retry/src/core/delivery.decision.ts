import { NonRetryableError } from '../errors/non-retryable.error.js';
import { errorMessage } from './error-message.js';
import type { ErrorClass } from './retry-options.js';

/**
 * Why a message was parked, as written to `x-parked-reason`: attempts ran out, the error was non-retryable, the
 * body (or, for a delayed message, its target headers) could not be read, or a delayed message's target exchange
 * no longer exists.
 */
export type ParkReason = 'exhausted' | 'non-retryable' | 'malformed' | 'undeliverable';

/** What happens to a delivery before the handler runs. */
export type BeforeHandling = { action: 'handle'; payload: unknown } | { action: 'park'; reason: ParkReason; error: Error; handlerCalls: number };

/** What happens to a delivery whose handler failed. */
export type AfterFailure = { action: 'retry'; tier: number } | { action: 'park'; reason: ParkReason };

/**
 * Decides whether a delivery reaches the handler. A body that is not JSON is parked as malformed (the handler is
 * never called); a message that has already had every attempt (maxAttempts lowered since it failed) is parked as
 * exhausted rather than called once more.
 */
export function decideBeforeHandling(content: Buffer, attempt: number, maxAttempts: number): BeforeHandling {
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
