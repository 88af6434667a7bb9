import type { ExternalContextCreator } from '@nestjs/core';
import { isObservable, lastValueFrom } from 'rxjs';
import { answeringUnread, type HandlerInvoker } from '../pipeline/delivery.contracts.js';

/** What Nest's context creator asks of its guard, interceptor and filter creators: a `create` per handler. */
interface EnhancerCreator {
  create(...args: unknown[]): unknown;
}

const CREATORS = { guards: 'guardsContextCreator', interceptors: 'interceptorsContextCreator', filters: 'filtersContextCreator' } as const;

/** Nest's context options: every kind of enhancer applied. */
const ALL_ENHANCERS = { guards: true, interceptors: true, filters: true };

/** The enhancers Nest resolved for one handler, as its own creators returned them. */
type Resolved = Partial<Record<keyof typeof CREATORS, unknown>>;

/** True for an array Nest resolved as empty; anything else (a Nest version whose internals differ) counts as enhancers. */
const none = (resolved: unknown): boolean => Array.isArray(resolved) && resolved.length === 0;

/** An exception handler without custom filters: Nest's keeps them in `filters`. */
const noFilters = (handler: unknown): boolean => typeof handler === 'object' && handler !== null && 'filters' in handler && none(handler.filters);

/**
 * The invoker of a `@RetryWithBackoff` method in Nest's external context, which applies the application's guards,
 * interceptors and exception filters.
 *
 * That context costs four async layers on every message (a fifth of the library's CPU per message in the happy-path
 * bench), for nothing when the handler has no enhancer, the usual case. So while the context is created, `create` is
 * watched: when Nest resolves no guard, interceptor or filter, the method is called directly, as Nest would call it.
 * Anything else, including unknown Nest internals, or `direct: false` (retry logs 'nest'), gets Nest's context.
 */
export function handlerInvoker(
  creator: ExternalContextCreator,
  instance: object,
  method: (...args: unknown[]) => unknown,
  methodName: string,
  direct: boolean,
): HandlerInvoker {
  const resolved: Resolved = {};
  const watching = direct ? watchEnhancers(creator, resolved) : creator;
  const viaNest = watching.create(instance, method, methodName, undefined, undefined, undefined, undefined, ALL_ENHANCERS, 'rpc');
  if (!direct || !none(resolved.guards) || !none(resolved.interceptors) || !noFilters(resolved.filters)) {
    // Nest's context hands back what an exception filter returns as it is (an Observable, a Promise): it is awaited
    // here, so that a filter's erroring stream fails the call as a throw does rather than turning it into an ack.
    return (payload, context) => (viaNest as HandlerInvoker)(payload, context).then(answerOf);
  }
  // Nest awaits what the method returns (a thenable of any kind), then an Observable to its last value: the answer is
  // handed on unread, and read where the call's end is acted on (answeringUnread).
  return answeringUnread((payload, context) => {
    try {
      return Promise.resolve(method.call(instance, payload, context));
    } catch (error) {
      return Promise.reject(error);
    }
  });
}

const answerOf = (value: unknown): unknown => (isObservable(value) ? lastValueFrom(value, { defaultValue: undefined }) : value);

/** A creator that behaves as `creator` and records what its guard, interceptor and filter creators return. */
function watchEnhancers(creator: ExternalContextCreator, resolved: Resolved): ExternalContextCreator {
  const watching = Object.create(creator) as Record<string, unknown>;
  for (const [kind, property] of Object.entries(CREATORS) as Array<[keyof Resolved, string]>) {
    const original = (creator as unknown as Record<string, EnhancerCreator | undefined>)[property];
    if (typeof original?.create !== 'function') continue; // unknown internals: `resolved` stays empty, Nest's path is kept
    const recording = Object.create(original) as EnhancerCreator;
    recording.create = (...args: unknown[]) => (resolved[kind] = original.create(...args));
    watching[property] = recording;
  }
  return watching as unknown as ExternalContextCreator;
}
