import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';
import { RetryRmqContext } from './retry-rmq.context.js';

/**
 * Hands an event handler's error to the transport as it was thrown. Nest's default RPC filter logs any error that is
 * not an `RpcException` with its stack and replaces it with `{ status: 'error', message: 'Internal server error' }`,
 * so the transport could not tell a `NonRetryableError` (or a class in `nonRetryable`) from any other failure. With
 * this filter, `throw new NonRetryableError(...)` parks at once, and an expected retry logs the transport's one line.
 * A request's caller receives the error as Nest's ClientRMQ expects it (see RetryServer's replies).
 *
 * Outside RetryServer it stays out of the way as far as Nest lets it: in any other RPC context (a
 * `@RetryWithBackoff` handler, another transport's handler) it answers nothing, so Nest's own handling follows (for
 * a `@RetryWithBackoff` handler: retried or parked, as without the filter); in HTTP and other contexts it returns the
 * error as a failed stream, which Nest 12.5 answers as it would without the filter (Nest 10 and 11 leave an HTTP request
 * that any global catch-all filter caught unanswered: docs/transport.md).
 * @example app.useGlobalFilters(new RetryRpcExceptionFilter()) // or @UseFilters(RetryRpcExceptionFilter) on a controller
 */
@Catch()
export class RetryRpcExceptionFilter implements ExceptionFilter<unknown> {
  catch(exception: unknown, host: ArgumentsHost): Observable<never> | undefined {
    if (host.getType() === 'rpc' && !(host.switchToRpc().getContext() instanceof RetryRmqContext)) return undefined;
    return throwError(() => exception);
  }
}
