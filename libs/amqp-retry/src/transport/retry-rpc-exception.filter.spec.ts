import type { ArgumentsHost } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { isObservable, lastValueFrom, type Observable } from 'rxjs';
import type { RetryContext } from '../core/delivery/retry.context.js';
import { RetryRpcExceptionFilter } from './retry-rpc-exception.filter.js';
import { jest } from '@jest/globals';
import type { Logger } from '@nestjs/common';
import { BaseRpcExceptionFilter, RpcException } from '@nestjs/microservices';
import { RetryRmqContext } from './retry-rmq.context.js';

/** A host of `type` whose RPC context (its second argument) is `context`. */
function hostOf(type: string, context: unknown): ArgumentsHost {
  const args = [{ id: 1 }, context];
  return {
    getType: () => type,
    getArgs: () => args,
    getArgByIndex: (index: number) => args[index],
    switchToRpc: () => ({ getData: () => args[0], getContext: () => context }),
  } as unknown as ArgumentsHost;
}

const noop = () => undefined;
const rmqContext = () => new RetryRmqContext({} as ConsumeMessage, 'order.created', {} as RetryContext, { ack: noop, nack: noop, reject: noop });

describe('RetryRpcExceptionFilter', () => {
  const filter = new RetryRpcExceptionFilter();
  const error = new Error('declined');

  it("hands RetryServer's error through as thrown, as a failed stream", async () => {
    const answer = filter.catch(error, hostOf('rpc', rmqContext()));
    expect(isObservable(answer)).toBe(true);
    await expect(lastValueFrom(answer as Observable<never>)).rejects.toBe(error);
  });

  it("answers a request's caller as Nest's default filter does: an RpcException's error, any other as Internal server error", async () => {
    const answer = (exception: unknown) =>
      lastValueFrom(filter.catch(exception, hostOf('rpc', Object.assign(rmqContext(), { answersCaller: true }))) as Observable<never>);
    await expect(answer(new RpcException({ code: 'NOT_FOUND', id: 5 }))).rejects.toEqual({ code: 'NOT_FOUND', id: 5 });
    await expect(answer(new RpcException('no order 5'))).rejects.toEqual({ status: 'error', message: 'no order 5' });
    const logged = jest.spyOn((BaseRpcExceptionFilter as unknown as { logger: Logger }).logger, 'error').mockImplementation(() => undefined);
    await expect(answer(new Error('secret db password'))).rejects.toEqual({ status: 'error', message: 'Internal server error' });
    expect(logged).toHaveBeenCalledTimes(1); // the real error stays on the server, as Nest logs it
    logged.mockRestore();
  });

  it("answers nothing in another RPC context (a @RetryWithBackoff handler's, another transport's): Nest's own handling follows", () => {
    expect(filter.catch(error, hostOf('rpc', { attempt: 1 }))).toBeUndefined();
    expect(filter.catch(error, hostOf('rpc', undefined))).toBeUndefined();
  });

  it('answers HTTP with the failed stream, which Nest answers with its default response', async () => {
    const answer = filter.catch(error, hostOf('http', {}));
    await expect(lastValueFrom(answer as Observable<never>)).rejects.toBe(error);
  });
});
