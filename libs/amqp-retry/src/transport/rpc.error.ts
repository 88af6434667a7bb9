import { RpcException } from '@nestjs/microservices';

/**
 * The error an event handler failed with, as Nest's pipeline hands it on: an `RpcException` is unwrapped to the error
 * it carries (its exception filter does the same), so `new RpcException(new NonRetryableError('...'))` parks at once.
 * A plain error thrown from the handler reaches the transport only as Nest's `{ status: 'error', message }` unless
 * the RPC exception filter lets it through (see RetryRpcExceptionFilter): it is retried.
 */
export function unwrapRpcError(error: unknown): unknown {
  let inner = error;
  for (let depth = 0; depth < 8 && inner instanceof RpcException; depth++) inner = inner.getError();
  return inner;
}
