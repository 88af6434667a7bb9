import { businessQueueArguments } from '../core/topology/retry-topology.plan.js';
import type { QueueType } from '../core/config/retry.options.js';

/**
 * The `queueOptions` with which Nest's ClientRMQ can declare a RetryServer's queue as the server does (its default
 * declaration, without the dead-letter arguments, gets a 406 that closes its channel). `noAssert: true` is the other
 * way: the client then declares nothing.
 * @example ClientsModule.register([{ name: 'ORDERS', transport: Transport.RMQ, options: { urls, queue: 'orders', queueOptions: retryQueueOptions('orders') } }])
 */
export function retryQueueOptions(
  queue: string,
  options: { queueType?: QueueType } = {},
): {
  /** Always true: the server's queue is durable. */
  durable: true;
  /** The queue's arguments as the server declares them (its type, its dead-letter exchange). */
  arguments: Record<string, unknown>;
} {
  return { durable: true, arguments: businessQueueArguments(queue, options.queueType ?? 'classic') };
}
