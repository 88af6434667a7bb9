import { Catch, type RpcExceptionFilter } from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';

/**
 * Hands an event handler's error to the transport as it was thrown. Nest's default RPC filter logs any error that is
 * not an `RpcException` with its stack and replaces it with `{ status: 'error', message: 'Internal server error' }`,
 * so the transport could not tell a `NonRetryableError` (or a class in `nonRetryable`) from any other failure. With
 * this filter, `throw new NonRetryableError(...)` parks at once, and an expected retry logs the transport's one line.
 * A request's caller receives the error as Nest's ClientRMQ expects it (see RetryServer's replies).
 * @example app.useGlobalFilters(new RetryRpcExceptionFilter()) // or @UseFilters(RetryRpcExceptionFilter) on a controller
 */
@Catch()
export class RetryRpcExceptionFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown): Observable<never> {
    return throwError(() => exception);
  }
}
