import { RpcException } from '@nestjs/microservices';

/**
 * The error an event handler failed with: an `RpcException` is unwrapped to the error it carries, so
 * `new RpcException(new NonRetryableError('...'))` parks at once.
 */
export function unwrapRpcError(error: unknown): unknown {
  let inner = error;
  for (let depth = 0; depth < 8 && inner instanceof RpcException; depth++) inner = inner.getError();
  return inner;
}
