import { RetryConfigError } from '../../errors/retry-config.error.js';
import type { RetryHandlerOptions } from '../config/retry.options.js';

/** What a partitioned RetryServer's options are checked on: those it shares with a handler's. */
export type ServerPartitionsInput = Pick<RetryHandlerOptions, 'queue' | 'partitions' | 'exchange' | 'circuitBreaker' | 'rateLimit'>;

/**
 * What a RetryServer with `partitions` requires beyond a partitioned handler's rules: an `exchange` (the default
 * exchange cannot hash), and no `circuitBreaker` or `rateLimit` (they would be ignored in silence).
 */
export function checkServerPartitions(options: ServerPartitionsInput, at: (key: string) => string): void {
  const { queue, partitions, exchange, circuitBreaker, rateLimit } = options;
  if (partitions === undefined) return;
  if (exchange === undefined) {
    throw new RetryConfigError(
      at('partitions'),
      'is given without "exchange"',
      `Nest's ClientRMQ (and RetryClient with "queue") send to the queue by name through the default exchange, which cannot hash, and a partitioned "${queue}" has no queue of that name (its partitions are "${queue}.p0" ...): add exchange, e.g. exchange: '${queue}.in', and publish there: RetryClient({ exchange }), ClientRMQ({ exchange, wildcards: true }), or any AMQP client with the partition key's header (docs/transport.md#partitions).`,
    );
  }
  if (circuitBreaker !== undefined && circuitBreaker !== false) {
    throw new RetryConfigError(
      at('circuitBreaker'),
      'is given together with "partitions"',
      "A partition's order holds only while one consumer runs it, and an open circuit cancels that consumer: leave circuitBreaker out on a partitioned RetryServer (docs/partitions.md).",
    );
  }
  if (rateLimit !== undefined) {
    throw new RetryConfigError(
      at('rateLimit'),
      'is given together with "partitions"',
      'The limit is counted per handler queue, and a partitioned queue runs one per partition: leave rateLimit out, or lower prefetch (docs/partitions.md).',
    );
  }
}

/** RabbitMQ's default `channel_max`: the channels one connection may open. */
export const BROKER_CHANNEL_MAX = 2047;
/** The most channels a partitioned server may need on the consuming connection, leaving room for the rest. */
export const PARTITION_CHANNEL_BUDGET = 1_500;

/**
 * Refuses a partitioned RetryServer whose channels, when one instance owns every partition (a consumer and one per
 * retry schedule each, and the dead-letter consumer), pass PARTITION_CHANNEL_BUDGET. `schedules` counts the server's own.
 */
export function checkPartitionChannels(count: number, schedules: number, at: (key: string) => string): void {
  const channels = count * (schedules + 1) + 1;
  if (channels <= PARTITION_CHANNEL_BUDGET) return;
  throw new RetryConfigError(
    at('partitions.count'),
    `is ${count} with ${schedules} retry schedules (the server's, and ${schedules - 1} of patterns with delays of their own)`,
    `One instance that owns every partition (its peers stopped or gone) needs a consumer and a channel per schedule for each: ${channels} channels on one connection, near or past RabbitMQ's default channel_max of ${BROKER_CHANNEL_MAX} (the budget here is ${PARTITION_CHANNEL_BUDGET}). Use at most ${Math.floor((PARTITION_CHANNEL_BUDGET - 1) / (schedules + 1))} partitions with these schedules, or give fewer patterns delays of their own (docs/transport.md#partitions).`,
  );
}
