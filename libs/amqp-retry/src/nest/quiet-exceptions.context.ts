import type { ArgumentsHost } from '@nestjs/common';
import type { ExternalContextCreator } from '@nestjs/core';

/** What we use of Nest's ExternalExceptionsHandler: its `next`, and the step that runs the application's own filters. */
interface ExceptionsHandler {
  next(exception: Error, host: ArgumentsHost): Promise<unknown>;
  invokeCustomFilters?(exception: unknown, host: ArgumentsHost): Promise<unknown> | undefined;
}

interface FiltersContext {
  create(...args: unknown[]): ExceptionsHandler;
}

/**
 * A context creator whose exception handlers run the application's filters as Nest's do, but skip Nest's fallback,
 * which logs every failure's stack before rethrowing it: the engine logs one line per decision instead. Should a
 * Nest version name these internals differently, the creator is returned as it was (Nest's logging stays).
 */
export function withoutExceptionLogs(creator: ExternalContextCreator): ExternalContextCreator {
  const filters = (creator as unknown as { filtersContextCreator?: FiltersContext }).filtersContextCreator;
  if (typeof filters?.create !== 'function') return creator;
  const quiet = Object.create(filters) as FiltersContext;
  quiet.create = (...args: unknown[]) => {
    const handler = filters.create(...args);
    if (typeof handler.invokeCustomFilters !== 'function') return handler;
    const runFilters = handler.invokeCustomFilters.bind(handler);
    handler.next = async (exception, host) => {
      const result = runFilters(exception, host);
      // Nest's RPC rule (its RpcExceptionsHandler, which RetryServer's handlers go through): a falsy answer (undefined,
      // null, false, 0, '') is no answer, so the error stands; any other is the filter's (a value, or a stream or
      // Promise whose outcome decides)
      if (result) return result;
      throw exception;
    };
    return handler;
  };
  const derived = Object.create(creator) as ExternalContextCreator;
  (derived as unknown as { filtersContextCreator: FiltersContext }).filtersContextCreator = quiet;
  return derived;
}
