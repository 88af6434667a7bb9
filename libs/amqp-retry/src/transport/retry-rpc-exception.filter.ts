import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { BaseRpcExceptionFilter } from '@nestjs/microservices';
import { throwError, type Observable } from 'rxjs';
import { RetryRmqContext } from './retry-rmq.context.js';

/**
 * Hands an event handler's error to the transport as it was thrown. Nest's default RPC filter replaces any error that
 * is not an `RpcException` with `{ status: 'error', message: 'Internal server error' }`, so the transport could not
 * tell a `NonRetryableError` from any other failure; with this filter it parks at once.
 *
 * A request's caller receives what Nest's default filter answers: an `RpcException`'s error (an object as it is,
 * anything else as `{ status: 'error', message }`), any other error as `Internal server error` (logged, as Nest does).
 *
 * In any other RPC context it answers nothing, so Nest's own handling follows (a `@RetryWithBackoff` handler is
 * retried or parked as without the filter); in HTTP and other contexts it returns the error as a failed stream, which
 * Nest 12.5 answers as it would without the filter (Nest 10 and 11 leave such an HTTP request unanswered:
 * docs/transport.md).
 * @example app.useGlobalFilters(new RetryRpcExceptionFilter()) // or @UseFilters(RetryRpcExceptionFilter) on a controller
 */
@Catch()
export class RetryRpcExceptionFilter implements ExceptionFilter<unknown> {
  private readonly nest = new BaseRpcExceptionFilter();

  catch(exception: unknown, host: ArgumentsHost): Observable<never> | undefined {
    if (host.getType() !== 'rpc') return throwError(() => exception);
    const context: unknown = host.switchToRpc().getContext();
    if (!(context instanceof RetryRmqContext)) return undefined;
    if (context.answersCaller) return this.nest.catch(exception, host) as Observable<never>; // a failed stream, as Nest answers
    return throwError(() => exception);
  }
}
