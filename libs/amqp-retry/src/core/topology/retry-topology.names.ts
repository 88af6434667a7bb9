import { resolveHandlerConfig } from '../config/handler.config.js';
import { resolveModuleConfig } from '../config/module.config.js';
import type { RetryHandlerOptions } from '../config/retry.options.js';
import { scheduleIdOf } from './retry-plan.record.js';
import { planRetryTopology, retryNames, tierQueues } from './retry-topology.plan.js';

/**
 * What decides the names of a handler's retry topology: its tier delays (as `delays`, or as `backoff` with
 * `maxAttempts`) and its parking queue. The same spellings `@RetryWithBackoff` and a `RetryServer` take.
 */
export type RetryTopologyNamesOptions = Pick<RetryHandlerOptions, 'delays' | 'backoff' | 'maxAttempts' | 'errorQueue'>;

/** The names the library declares for one handler queue (see `retryTopologyNames`). */
export interface RetryTopologyNames {
  /** The handler's own queue, as given. */
  readonly queue: string;
  /** The retry tier queues, tier 1 first: `<queue>.retry.<position>.<delay>.<schedule digest>`. */
  readonly tiers: readonly string[];
  /** The parking queue: `errorQueue`, else `<queue>.error`. */
  readonly errorQueue: string;
  /** `<queue>.dlx`: the queue's dead-letter exchange, which routes a failure to its next tier. */
  readonly deadLetterExchange: string;
  /** `<queue>.dlx.first`: the dead-letter exchange's alternate exchange, which takes first failures to tier 1. */
  readonly firstFailureExchange: string;
  /** `<queue>.return`: where an expired tier sends a message back, bound to the queue alone. */
  readonly returnExchange: string;
  /** `<queue>.retry.plan`: the record of the tiers the latest start applied. */
  readonly planQueue: string;
  /** `<queue>.retry.live.<schedule>`: auto-deleted, consumed by every running instance on this schedule. */
  readonly presenceQueue: string;
  /** Every queue the library declares for the handler, in declaration order (the presence queue aside). */
  readonly queues: readonly string[];
  /** Every exchange the library declares for the handler, in declaration order (the handler's own aside). */
  readonly exchanges: readonly string[];
}

/**
 * The names of the queues and exchanges the library declares for a handler on `queue`, from the same plan it declares
 * them by, for tests, dashboards and scripts that must not copy the naming rule. Pure. Without `delays` or `backoff`
 * the tiers are the default ones (`['1s', '10s', '1m']`): give the module's `delays` when it sets others (`RETRY_DELAYS`
 * included). Invalid options throw the `RetryConfigError` the decorator would.
 * @example retryTopologyNames('orders', { delays: ['1s', '10s'] }).tiers // ['orders.retry.1.1s.<id>', 'orders.retry.2.10s.<id>']
 * @example retryTopologyNames('orders').errorQueue // 'orders.error'
 */
export function retryTopologyNames(queue: string, options: RetryTopologyNamesOptions = {}): RetryTopologyNames {
  const { delays, backoff, maxAttempts, errorQueue } = options;
  const at = (key: string) => `retryTopologyNames option "${key}"`;
  const config = resolveHandlerConfig({ queue, delays, backoff, maxAttempts, errorQueue }, resolveModuleConfig({}, {}), 'retryTopologyNames', at);
  const plan = planRetryTopology(config);
  const names = retryNames(config.queue);
  const tiers = tierQueues(config);
  return {
    queue: config.queue,
    tiers,
    errorQueue: config.errorQueue,
    deadLetterExchange: names.deadLetterExchange,
    firstFailureExchange: names.firstFailureExchange,
    returnExchange: names.returnExchange,
    planQueue: names.planQueue,
    presenceQueue: names.presenceQueue(scheduleIdOf(tiers)),
    queues: plan.queues.map((q) => q.name),
    exchanges: plan.exchanges.map((e) => e.name),
  };
}
