import { resolveHandlerConfig, type HandlerConfig } from '../core/handler-config.js';
import type { ModuleConfig } from '../core/module-config.js';
import type { RetryHandlerOptions } from '../core/retry-options.js';
import { tierQueues } from '../core/retry-topology.plan.js';
import type { RetryPolicy } from '../amqp/retry-delivery.handler.js';
import { RetryConfigError } from '../errors/retry-config.error.js';
import type { EventRetryOptions, RetryServerOptions } from './retry-transport.options.js';

const POLICY_KEYS: ReadonlyArray<keyof EventRetryOptions> = ['delays', 'backoff', 'maxAttempts', 'nonRetryable'];

/** The queue's configuration: the server's options as one handler's (the queue's own schedule takes first failures). */
export function queueConfig(options: RetryServerOptions, module: ModuleConfig, bindings: string[]): HandlerConfig {
  const { queue, exchange, exchangeType, errorQueue, nonRetryable, backoff, prefetch, queueType, deserializer } = options;
  const routingKey = options.routingKey ?? (bindings.length > 0 ? bindings : undefined);
  const handlerOptions: RetryHandlerOptions = {
    queue,
    exchange,
    exchangeType,
    routingKey,
    errorQueue,
    nonRetryable,
    backoff,
    prefetch,
    queueType,
    deserializer,
  };
  if (options.delays !== undefined && backoff === undefined) handlerOptions.delays = options.delays;
  return resolveHandlerConfig(handlerOptions, module, 'the RetryServer', (key) => `RetryServer option "${key}"`);
}

/**
 * A pattern's policy: its `retry` extras over the server's. Its schedule is the queue's when the delays are the same
 * (first failures by nack), else one of its own (first failures published to its first tier). Invalid extras fail at
 * start, naming the pattern.
 */
export function patternPolicy(
  pattern: string,
  extras: unknown,
  queue: HandlerConfig,
  server: RetryServerOptions,
  module: ModuleConfig,
): { policy: RetryPolicy; schedule?: HandlerConfig } {
  const retry = (extras as { retry?: unknown } | undefined)?.retry;
  if (retry === undefined) return { policy: queue };
  const where = `@EventPattern(${JSON.stringify(pattern)})`;
  if (typeof retry !== 'object' || retry === null || Array.isArray(retry)) {
    throw new RetryConfigError(
      `The "retry" extra of ${where}`,
      `is ${JSON.stringify(retry)}`,
      "Give an object, e.g. { delays: ['1s'], maxAttempts: 3 }.",
    );
  }
  const unknown = Object.keys(retry).filter((k) => !(POLICY_KEYS as string[]).includes(k));
  if (unknown.length > 0) {
    throw new RetryConfigError(
      `The "retry" extra of ${where}`,
      `has ${unknown.map((k) => `"${k}"`).join(', ')}`,
      `A pattern may set ${POLICY_KEYS.join(', ')}; the queue, exchange and prefetch are the RetryServer's options.`,
    );
  }
  const own = retry as EventRetryOptions;
  const base: RetryHandlerOptions = { queue: queue.queue, nonRetryable: server.nonRetryable };
  const inherited = own.delays === undefined && own.backoff === undefined ? { delays: queue.delaysMs } : {};
  const config = resolveHandlerConfig(
    { ...base, ...inherited, ...own, queueType: queue.queueType },
    module,
    where,
    (key) => `The retry option "${key}" of ${where}`,
  );
  const sameSchedule = tierQueues(config)[0] === tierQueues(queue)[0];
  const policy: RetryPolicy = {
    maxAttempts: own.maxAttempts === undefined && own.delays === undefined && own.backoff === undefined ? queue.maxAttempts : config.maxAttempts,
    delaysMs: config.delaysMs,
    isRetryable: config.isRetryable,
    firstTier: sameSchedule ? undefined : tierQueues(config)[0],
  };
  return sameSchedule ? { policy } : { policy, schedule: { ...queue, delaysMs: config.delaysMs } };
}
