import { decideAfterFailure } from '../delivery/delivery.decision.js';

/**
 * Whether a handler's failure counts toward opening the breaker: only a retryable error (the others say the message
 * is bad), and then as `countsAsFailure` says (a predicate that throws counts the error).
 */
export function countsAsOutage(error: unknown, retryable: boolean, countsAsFailure?: (error: unknown) => boolean): boolean {
  if (decideAfterFailure(1, Infinity, retryable, 1, error).action !== 'retry') return false;
  if (countsAsFailure === undefined) return true;
  try {
    return Boolean(countsAsFailure(error));
  } catch {
    return true;
  }
}
