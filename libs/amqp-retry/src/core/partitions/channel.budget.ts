import { RetryConfigError } from '../../errors/retry-config.error.js';
import { BROKER_CHANNEL_MAX, PARTITION_CHANNEL_BUDGET } from './server-partitions.config.js';

/** What one handler of an application opens on the consuming connection, as far as the budget goes. */
export interface ChannelNeed {
  queue: string;
  /** "Class.method", or the transport's queue: named in the error. */
  where: string;
  /** Its partitions.count; undefined: not partitioned. */
  partitions?: number;
  /** Its retry schedules (its own, and each pattern's with delays of its own): one presence consumer each. */
  schedules: number;
}

/**
 * The channels a handler holds when this instance owns every partition: per queue its consumer and a presence consumer
 * per schedule, its dead-letter consumer, and a partitioned handler's members' listener.
 */
export const channelsOf = ({ partitions, schedules }: ChannelNeed): number =>
  (partitions ?? 1) * (1 + schedules) + 1 + (partitions === undefined ? 0 : 1);

/** A partitioned handler's channels besides its partitions': the members' listener and the dead-letter consumer. */
const PER_PARTITIONED_HANDLER = 2;

/** The channels consumers may take of `channelMax`: RetryServer's share of the default, the rest kept for declarations and reads. */
export const consumerChannels = (channelMax: number): number => Math.floor((channelMax * PARTITION_CHANNEL_BUDGET) / BROKER_CHANNEL_MAX);

/**
 * Refuses, at start, partitions one instance owning them all could not consume on its consuming connection (past its
 * channels, the last ones never start). `channelMax`: as negotiated (undefined: no check).
 */
export function checkChannelBudget(needs: readonly ChannelNeed[], channelMax: number | undefined): void {
  const partitioned = needs.filter((n) => n.partitions !== undefined);
  if (partitioned.length === 0 || channelMax === undefined || channelMax <= 0) return;
  const needed = needs.reduce((sum, n) => sum + channelsOf(n), 0);
  const budget = consumerChannels(channelMax);
  if (needed <= budget) return;
  const others = needed - partitioned.reduce((sum, n) => sum + channelsOf(n), 0);
  const perPartition = Math.max(...partitioned.map((n) => 1 + n.schedules));
  const fits = Math.max(0, Math.floor((budget - others - PER_PARTITIONED_HANDLER * partitioned.length) / perPartition));
  throw new RetryConfigError(
    'partitions.count',
    `of ${partitioned.map((n) => `"${n.queue}" (${n.where}): ${n.partitions}`).join(', ')} needs ${needed} channels on the consuming connection when one instance owns every partition (its peers stopped or gone)`,
    `Each partition takes a consumer and one per retry schedule, each on a channel of its own, and the connection allows ${channelMax} (channel_max as negotiated with the broker: the URL's ?channelMax= or the broker's channel_max, 2047 by default), of which ${budget} are kept for consumers. Past that, partitions would stay unconsumed while this instance owns them. Use at most ${fits} partitions in all across these handlers, run them in separate applications, or raise channel_max on the broker and in the URL (docs/partitions.md#channels).`,
  );
}
