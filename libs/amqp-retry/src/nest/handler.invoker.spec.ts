import {
  type ArgumentsHost,
  Catch,
  type CallHandler,
  type CanActivate,
  type ExceptionFilter,
  type ExecutionContext,
  Injectable,
  Module,
  type NestInterceptor,
  UseFilters,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, ExternalContextCreator, NestFactory } from '@nestjs/core';
import { map, Observable, of, throwError } from 'rxjs';
import type { RetryContext } from '../core/delivery/retry.context.js';
import { handlerInvoker } from './handler.invoker.js';
import { answerOf, answersUnread } from '../pipeline/delivery.contracts.js';

const context = { attempt: 1 } as RetryContext;

class Denied implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

class Doubling implements NestInterceptor {
  intercept(_: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(map((value) => (value as number) * 2));
  }
}

@Catch()
class Replacing implements ExceptionFilter {
  catch(_: unknown, __: ArgumentsHost): string {
    return 'handled by the filter';
  }
}

/**
 * One real application context, and the invoker of `methodName` of a fresh instance of `Host`, with what Nest's create
 * returned. `alter` may change the context creator first (to play a Nest whose internals differ).
 */
async function invokerOf<T extends object>(
  Host: new () => T,
  methodName: keyof T & string,
  providers: unknown[] = [],
  direct = true,
  alter: (creator: Record<string, unknown>) => void = () => undefined,
) {
  @Module({ providers: [Host, ...(providers as [])] })
  class AppModule {}
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const creator = app.get(ExternalContextCreator);
  let nestCalls = 0;
  const watched = Object.create(creator) as ExternalContextCreator;
  alter(watched as unknown as Record<string, unknown>);
  watched.create = function (this: ExternalContextCreator, ...args: Parameters<ExternalContextCreator['create']>) {
    const fn = creator.create.apply(this, args) as (...a: unknown[]) => Promise<unknown>;
    return (...a: unknown[]) => {
      nestCalls++;
      return fn(...a);
    };
  } as ExternalContextCreator['create'];
  const instance = app.get(Host);
  const method = (instance as Record<string, (...args: unknown[]) => unknown>)[methodName];
  const invoke = handlerInvoker(watched, instance, method, methodName, direct);
  return { invoke, nestCalls: () => nestCalls, close: () => app.close() };
}

describe('handlerInvoker', () => {
  it('calls a handler without enhancers directly, with its instance, payload and context', async () => {
    @Injectable()
    class Host {
      readonly name = 'host';
      async handle(payload: unknown, ctx: RetryContext) {
        return { self: this.name, payload, attempt: ctx.attempt };
      }
    }
    const { invoke, nestCalls, close } = await invokerOf(Host, 'handle');
    await expect(invoke({ id: 1 }, context)).resolves.toEqual({ self: 'host', payload: { id: 1 }, attempt: 1 });
    expect(nestCalls()).toBe(0);
    await close();
  });

  it('passes the same error on, whether thrown synchronously or rejected, as a rejection', async () => {
    const error = new Error('boom');
    @Injectable()
    class Host {
      sync() {
        throw error;
      }
      async later() {
        throw error;
      }
    }
    for (const name of ['sync', 'later'] as const) {
      const { invoke, close } = await invokerOf(Host, name);
      let caught: unknown;
      const settled = invoke({}, context).catch((e: unknown) => (caught = e));
      await settled;
      expect(caught).toBe(error);
      await close();
    }
  });

  it('awaits an Observable to its last value, returned or resolved (read by answerOf), as Nest does; a failing one rejects', async () => {
    @Injectable()
    class Host {
      observable() {
        return of(1, 2, 3);
      }
      async promisedObservable() {
        return of('a', 'b');
      }
      thenable() {
        return { then: (resolve: (value: unknown) => void) => resolve(of('x', 'y')) }; // not a native Promise
      }
      failing() {
        return throwError(() => new Error('from the observable'));
      }
      plain() {
        return 7;
      }
    }
    const results: unknown[] = [];
    for (const name of ['observable', 'promisedObservable', 'thenable', 'plain'] as const) {
      const { invoke, close } = await invokerOf(Host, name);
      expect(answersUnread(invoke)).toBe(true); // read where the call's end is acted on
      results.push(await answerOf(await invoke({}, context)));
      await close();
    }
    expect(results).toEqual([3, 'b', 'y', 7]);
    const { invoke, close } = await invokerOf(Host, 'failing');
    await expect(invoke({}, context).then(answerOf)).rejects.toThrow('from the observable');
    await close();
  });

  it.each([
    ['a method guard', 'method-guard'],
    ['a class guard', 'class-guard'],
    ['a global guard (APP_GUARD)', 'app-guard'],
  ])('keeps Nest context for %s: the guard refuses the call', async (_, where) => {
    let calls = 0;
    @Injectable()
    @UseGuards(...(where === 'class-guard' ? [Denied] : []))
    class Host {
      @UseGuards(...(where === 'method-guard' ? [Denied] : []))
      handle() {
        calls++;
      }
    }
    const providers = where === 'app-guard' ? [{ provide: APP_GUARD, useClass: Denied }] : [];
    const { invoke, nestCalls, close } = await invokerOf(Host, 'handle', providers);
    await expect(invoke({}, context)).rejects.toThrow(/Forbidden/);
    expect(nestCalls()).toBe(1);
    expect(calls).toBe(0);
    await close();
  });

  it.each([
    ['a method interceptor', 'method'],
    ['a global interceptor (APP_INTERCEPTOR)', 'app'],
  ])('keeps Nest context for %s: the interceptor maps the result', async (_, where) => {
    @Injectable()
    class Host {
      @UseInterceptors(...(where === 'method' ? [Doubling] : []))
      handle() {
        return 21;
      }
    }
    const providers = where === 'app' ? [{ provide: APP_INTERCEPTOR, useClass: Doubling }] : [];
    const { invoke, nestCalls, close } = await invokerOf(Host, 'handle', providers);
    await expect(invoke({}, context)).resolves.toBe(42);
    expect(nestCalls()).toBe(1);
    await close();
  });

  it('keeps Nest context for an exception filter: the filter decides the outcome', async () => {
    @Injectable()
    class Host {
      @UseFilters(Replacing)
      handle() {
        throw new Error('replaced');
      }
    }
    const { invoke, nestCalls, close } = await invokerOf(Host, 'handle');
    await expect(invoke({}, context)).resolves.toBe('handled by the filter');
    expect(nestCalls()).toBe(1);
    await close();
  });

  it.each([
    ['an Observable that errors', () => throwError(() => new Error('still failed')), 'rejects'],
    ['a Promise that rejects', () => Promise.reject(new Error('still failed')), 'rejects'],
    ['an Observable that completes', () => of('handled'), 'resolves'],
    ['an Observable that completes without a value', () => of(), 'resolves'],
  ] as const)("awaits a filter's answer: %s", async (_, answer, outcome) => {
    @Catch()
    class Answering implements ExceptionFilter {
      catch(): unknown {
        return answer();
      }
    }
    @Injectable()
    class Host {
      @UseFilters(Answering)
      handle() {
        throw new Error('the handler failed');
      }
    }
    for (const direct of [true, false]) {
      const { invoke, close } = await invokerOf(Host, 'handle', [], direct);
      if (outcome === 'rejects') await expect(invoke({}, context)).rejects.toThrow('still failed');
      else await expect(invoke({}, context)).resolves.not.toBeInstanceOf(Observable);
      await close();
    }
  });

  it("keeps Nest context when told to ('nest' retry logs), even without enhancers", async () => {
    @Injectable()
    class Host {
      handle() {
        return 1;
      }
    }
    const { invoke, nestCalls, close } = await invokerOf(Host, 'handle', [], false);
    await expect(invoke({}, context)).resolves.toBe(1);
    expect(nestCalls()).toBe(1);
    await close();
  });

  it("keeps Nest context when Nest's internals are not what it knows", async () => {
    @Injectable()
    class Host {
      handle() {
        return 1;
      }
    }
    // A Nest version whose exception handler keeps its filters elsewhere: nothing tells that there are none.
    const hideFilters = (creator: Record<string, unknown>) => {
      const filters = creator.filtersContextCreator as { create(...a: unknown[]): { next(...a: unknown[]): unknown } };
      creator.filtersContextCreator = {
        create: (...args: unknown[]) => {
          const handler = filters.create(...args);
          return { next: (...a: unknown[]) => handler.next(...a) };
        },
      };
    };
    const { invoke, nestCalls, close } = await invokerOf(Host, 'handle', [], true, hideFilters);
    await expect(invoke({}, context)).resolves.toBe(1);
    expect(nestCalls()).toBe(1);
    await close();
  });
});
