import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';
import { RetryRmqContext } from './retry-rmq.context.js';

/**
 * Hands an event handler's error to the transport as it was thrown. Nest's default RPC filter replaces any error that
 * is not an `RpcException` with `{ status: 'error', message: 'Internal server error' }`, so the transport could not
 * tell a `NonRetryableError` from any other failure; with this filter it parks at once.
 *
 * A request's caller receives the error as Nest's ClientRMQ expects it.
 *
 * In any other RPC context it answers nothing, so Nest's own handling follows (a `@RetryWithBackoff` handler is
 * retried or parked as without the filter); in HTTP and other contexts it returns the error as a failed stream, which
 * Nest 12.5 answers as it would without the filter (Nest 10 and 11 leave such an HTTP request unanswered:
 * docs/transport.md).
 * @example app.useGlobalFilters(new RetryRpcExceptionFilter()) // or @UseFilters(RetryRpcExceptionFilter) on a controller
 */
@Catch()
export class RetryRpcExceptionFilter implements ExceptionFilter<unknown> {
  catch(exception: unknown, host: ArgumentsHost): Observable<never> | undefined {
    if (host.getType() === 'rpc' && !(host.switchToRpc().getContext() instanceof RetryRmqContext)) return undefined;
    return throwError(() => exception);
  }
}
