/**
 * A handler call outlived its `timeout` (RetryWithBackoff option, RetryModule `handlerTimeout`, or a pattern's). It
 * is the reason its `signal` aborts with, and the failure the attempt is retried or parked with.
 */
export class HandlerTimeoutError extends Error {
  constructor(
    /** The handler's queue. */
    readonly queue: string,
    /** The timeout the call outlived, in milliseconds. */
    readonly timeoutMs: number,
    /** The attempt that timed out (1 for the first delivery). */
    readonly attempt: number,
    formatted: string,
  ) {
    super(
      `The handler of "${queue}" did not finish attempt ${attempt} within its timeout of ${formatted}: its signal was aborted and the attempt counts as failed`,
    );
    this.name = 'HandlerTimeoutError';
  }

  /**
   * Settles (never rejects) when the abandoned call ends, for as long as it runs on past its timeout. The idempotency
   * step holds the message's claim until then, so that its retry does not run beside it.
   */
  callEnded: Promise<void> = Promise.resolve();
}

/** Whether `error` is a call's timeout; false for anything else, a thrown Proxy whose traps throw included. */
export function isTimeout(error: unknown): error is HandlerTimeoutError {
  try {
    return error instanceof HandlerTimeoutError;
  } catch {
    return false;
  }
}
