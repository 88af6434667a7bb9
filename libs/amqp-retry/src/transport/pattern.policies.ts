import { resolveHandlerConfig, type HandlerConfig } from '../core/config/handler.config.js';
import type { ModuleConfig } from '../core/config/module.config.js';
import type { RetryHandlerOptions } from '../core/config/retry.options.js';
import { tierQueues } from '../core/topology/retry-topology.plan.js';
import type { RetryPolicy } from '../pipeline/delivery.contracts.js';
import { RetryConfigError } from '../errors/retry-config.error.js';
import { checkServerPartitions } from '../core/partitions/server-partitions.config.js';
import type { EventRetryOptions, RetryServerOptions } from './retry-transport.options.js';

const POLICY_KEYS: ReadonlyArray<keyof EventRetryOptions> = ['delays', 'backoff', 'maxAttempts', 'nonRetryable', 'timeout'];

/** The queue's configuration: the server's options as one handler's (with `partitions`, after the server's own rules for them). */
export function queueConfig(options: RetryServerOptions, module: ModuleConfig, bindings: string[]): HandlerConfig {
  const { queue, exchange, exchangeType, errorQueue, nonRetryable, backoff, prefetch, queueType, deserializer, partitions } = options;
  const at = (key: string) => `RetryServer option "${key}"`;
  checkServerPartitions(options, at);
  if (deserializer === 'raw')
    throw new RetryConfigError(
      at('deserializer'),
      "is 'raw': the server would read each body as a Buffer, find no Nest packet in it, and take every message for an event named by its routing key, so no pattern's handler would run and no request would be answered",
      'Leave it out (the transport reads JSON), or give a function that returns the packet, e.g. to decompress or decrypt the body first',
    );
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
    partitions,
  };
  if (options.delays !== undefined && backoff === undefined) handlerOptions.delays = options.delays;
  return resolveHandlerConfig(handlerOptions, module, 'the RetryServer', at);
}

/**
 * The extras that carry a pattern's `retry` policy among those of its handlers: Nest chains every `@EventPattern` of one
 * pattern after the first, and all share one policy. Two that give one fail at start: which should win is not ours to guess.
 */
export function policyExtras(pattern: string, chain: readonly unknown[]): unknown {
  const giving = chain.filter((extras) => (extras as { retry?: unknown } | undefined)?.retry !== undefined);
  if (giving.length > 1) {
    throw new RetryConfigError(
      `@EventPattern(${JSON.stringify(pattern)})`,
      `has ${giving.length} handlers that each give a "retry" policy`,
      'Give it on one of them: they all run on every attempt of a message, so they share one policy.',
    );
  }
  return giving[0] ?? chain[0];
}

/**
 * A pattern's policy: its `retry` extras over the server's. Its schedule is the queue's when the delays are the same
 * (first failures by nack), else one of its own (first failures published to its first tier).
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
  const inherited = own.delays === undefined && own.backoff === undefined ? { delays: queue.delaysMs } : {};
  const options: RetryHandlerOptions = { queue: queue.queue, nonRetryable: server.nonRetryable, ...inherited, ...own, queueType: queue.queueType };
  const config = resolveHandlerConfig(options, module, where, (key) => `The retry option "${key}" of ${where}`);
  const sameSchedule = tierQueues(config)[0] === tierQueues(queue)[0];
  const policy: RetryPolicy = {
    maxAttempts: own.maxAttempts === undefined && own.delays === undefined && own.backoff === undefined ? queue.maxAttempts : config.maxAttempts,
    delaysMs: config.delaysMs,
    isRetryable: config.isRetryable,
    timeoutMs: own.timeout === undefined ? queue.timeoutMs : config.timeoutMs,
    firstTier: sameSchedule ? undefined : tierQueues(config)[0],
  };
  return sameSchedule ? { policy } : { policy, schedule: { ...queue, delaysMs: config.delaysMs } };
}
