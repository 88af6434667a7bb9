/**
 * A handler call outlived its `timeout` (RetryWithBackoff option, RetryModule `handlerTimeout`, or a pattern's). It
 * is the reason its `signal` aborts with, and the failure the attempt is retried or parked with.
 */
export class HandlerTimeoutError extends Error {
  constructor(
    readonly queue: string,
    readonly timeoutMs: number,
    readonly attempt: number,
    formatted: string,
  ) {
    super(
      `The handler of "${queue}" did not finish attempt ${attempt} within its timeout of ${formatted}: its signal was aborted and the attempt counts as failed`,
    );
    this.name = 'HandlerTimeoutError';
  }
}
