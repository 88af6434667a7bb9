import {
  type ArgumentsHost,
  type CallHandler,
  Catch,
  Controller,
  type ExceptionFilter,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
  UseFilters,
  UseInterceptors,
} from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { NonRetryableError, RetryModule, retryTopologyNames, RetryWithBackoff, type RetryContext } from 'nestjs-amqp-retry';
import { tap } from 'rxjs';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

/** Handlers run through the application's interceptors and exception filters, whether a provider or a controller holds them. */
describe('Nest interceptors and exception filters around handlers', () => {
  const suite = useSuite('e2e.enhancers');

  it('runs handlers through the app interceptors and exception filters, with an rpc context', async () => {
    const { broker, queue } = suite;
    const seen: string[] = [];
    @Injectable()
    class RecordingInterceptor implements NestInterceptor {
      intercept(context: ExecutionContext, next: CallHandler) {
        const rpc = context.switchToRpc();
        seen.push(`${context.getType()}:${JSON.stringify(rpc.getData())}:attempt ${rpc.getContext<RetryContext>().attempt}`);
        return next.handle().pipe(tap({ error: (e: Error) => seen.push(`error:${e.message}`) }));
      }
    }
    @Catch()
    class SwallowingFilter implements ExceptionFilter {
      catch(exception: Error, host: ArgumentsHost) {
        seen.push(`filter:${exception.message}:${host.getType()}`);
        return { handled: true }; // a filter that returns a value instead of rethrowing marks the message handled
      }
    }
    const Handler = handlerFor({ queue }, () => {
      throw new Error('boom');
    });
    const app = await startApp([
      Handler,
      { provide: APP_INTERCEPTOR, useClass: RecordingInterceptor },
      { provide: APP_FILTER, useClass: SwallowingFilter },
    ]);
    try {
      await broker.publish('', queue, { id: 3 });
      await waitFor(() => seen.length === 3, 'interceptor and filter');
      expect(seen).toEqual(['rpc:{"id":3}:attempt 1', 'error:boom', 'filter:boom:rpc']);
      await waitFor(async () => (await broker.count(queue)) === 0, 'the ack');
      expect(await broker.count(retryTopologyNames(queue, { delays: [1_000, 10_000, 60_000] }).tiers[0])).toBe(0); // no retry either (module default tiers)
      expect(handlerOf(app, Handler).calls).toHaveLength(1);
    } finally {
      await app.close();
    }
  });

  /** Class-referenced interceptors and filters apply on a @Controller's handler as on a provider's. */
  it.each(['controller', 'provider'] as const)('applies them on a %s', async (kind) => {
    const { broker, queue } = suite;
    const seen: unknown[] = [];

    @Injectable()
    class CountingInterceptor implements NestInterceptor {
      intercept(context: ExecutionContext, next: CallHandler) {
        seen.push(context.switchToRpc().getData());
        return next.handle().pipe(tap(() => undefined));
      }
    }

    /** Turns a "validation" failure into a NonRetryableError: the message parks at once. */
    @Catch()
    class ValidationFilter implements ExceptionFilter {
      catch(exception: unknown, _host: ArgumentsHost) {
        if (exception instanceof Error && exception.message.startsWith('invalid')) throw new NonRetryableError(exception.message);
        throw exception;
      }
    }

    class Handler {
      calls = 0;
      @RetryWithBackoff({ queue, delays: ['50ms'], maxAttempts: 5 })
      @UseInterceptors(CountingInterceptor)
      @UseFilters(ValidationFilter)
      async handle(payload: { valid: boolean }): Promise<void> {
        this.calls++;
        if (!payload.valid) throw new Error('invalid order');
      }
    }
    (kind === 'controller' ? Controller() : Injectable())(Handler);
    const Host = Handler;

    const moduleRef = await Test.createTestingModule({
      imports: [RetryModule.forRoot(TEST_OPTIONS)],
      ...(kind === 'controller' ? { controllers: [Host] } : { providers: [Host] }),
    }).compile();
    moduleRef.useLogger(false);
    const app = await moduleRef.init();
    try {
      await broker.publish('', queue, { valid: true });
      await broker.publish('', queue, { valid: false });
      const [parked] = await broker.take(`${queue}.error`, 1);
      expect(parked.properties.headers?.['x-parked-reason']).toBe('non-retryable'); // the filter applied: no retries
      await waitFor(() => seen.length === 2, 'the interceptor to see both');
      expect(seen).toEqual([{ valid: true }, { valid: false }]);
      expect(app.get<Handler>(Host).calls).toBe(2);
    } finally {
      await app.close();
    }
  });
});
