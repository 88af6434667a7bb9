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
import { Test } from '@nestjs/testing';
import { NonRetryableError, RetryModule, RetryWithBackoff } from 'nestjs-amqp-retry';
import { tap } from 'rxjs';
import { TEST_OPTIONS } from '../support/app.js';
import { TestBroker, uniqueName, waitFor } from '../support/broker.js';

/** Finding 14: class-referenced interceptors and filters apply on a @Controller's handler as on a provider's. */
describe('enhancers referenced by class on controllers and providers', () => {
  let broker: TestBroker;
  let queue: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await broker.close();
  });
  beforeEach(() => {
    queue = uniqueName('e2e.enhancers');
  });
  afterEach(async () => {
    await broker.deleteRetryTopology(queue);
  });

  it.each(['controller', 'provider'] as const)('applies them on a %s', async (kind) => {
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
