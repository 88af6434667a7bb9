import type { HandlerConfig } from '../config/handler.config.js';
import { retryNames } from '../topology/retry-topology.plan.js';
import type { TopologyPlan } from '../topology/topology.types.js';
import { MAX_PARTITIONS } from './partitions.config.js';

/** The names of a partitioned handler's queue Q: the exchange that hashes, each partition's queue, and the members' exchange. */
export const partitionNames = (queue: string) => ({
  /** The consistent-hash exchange (named like the queue: publish here when the handler has no exchange of its own). */
  hashExchange: queue,
  /** Partition `i`'s queue, with its own tiers and parking queue like any handler queue. */
  partition: (i: number) => `${queue}.p${i}`,
  /** Where the running instances announce themselves (fanout). */
  membersExchange: `${queue}.partitions.members`,
  /** The dead-letter queue every partition shares: what expired in a partition or was pushed out of it, parked from there. */
  deadLetterQueue: retryNames(queue).deadLetterQueue,
  /** Holds the record of what the hash exchange hashes (hash-key.record.ts): AMQP cannot read an exchange's arguments. */
  keyRecord: `${queue}.partitions.key`,
});

/** A partition queue's weight on the hash ring: equal weights spread keys evenly (measured: docs/partitions.md). */
export const PARTITION_WEIGHT = '1';

/** How many numbers in a row, past `count`, the search for retired partitions finds nothing of before it stops. */
export const RETIRED_SEARCH_GAP = 8;

/**
 * Whether the search for partitions beyond `count` (left by an earlier, larger count) goes on to `index`, given how
 * many numbers in a row before it had neither a queue nor a parking queue: an operator may delete some of the retired
 * ones before others (each once empty), so one missing number does not end them.
 */
export const searchesRetired = (index: number, missingInARow: number): boolean => index < MAX_PARTITIONS && missingInARow < RETIRED_SEARCH_GAP;

/**
 * The handler configuration of each partition: queue `Q.p<i>` parking in `Q.p<i>.error` (or `<errorQueue>.p<i>`),
 * single active consumer, ordered by the partition key, fed by the hash exchange (fed by the handler's own, if any).
 */
export function partitionConfigs(config: HandlerConfig): HandlerConfig[] {
  const partitions = config.partitions;
  if (partitions === undefined) return [config];
  const names = partitionNames(config.queue);
  const ownErrorQueue = config.errorQueue !== `${config.queue}.error`;
  // The handler's own exchange feeds the hash exchange; none when publishers use the hash exchange itself.
  const { exchange, exchangeType, routingKeys } = config;
  const upstream = exchange === undefined || exchangeType === 'x-consistent-hash' ? undefined : { exchange, exchangeType, routingKeys };
  return Array.from({ length: partitions.count }, (_, index) => {
    const queue = names.partition(index);
    return {
      ...config,
      queue,
      errorQueue: ownErrorQueue ? `${config.errorQueue}.p${index}` : `${queue}.error`,
      exchange: names.hashExchange,
      exchangeType: 'x-consistent-hash' as const,
      exchangeArguments: partitions.hashArguments,
      routingKeys: [PARTITION_WEIGHT],
      upstream,
      ordering: partitions.ordering,
      retryInPlace: partitions.ordering.whileRetrying === 'hold',
      singleActiveConsumer: true,
      partitions: undefined,
      partitionOf: { queue: config.queue, index, count: partitions.count },
      deadLetterQueue: names.deadLetterQueue,
    };
  });
}

/**
 * What a deleted hash exchange takes with it, to declare again once it is declared: the handler's own exchange (if it
 * has one) and its bindings into the hash exchange, then partitions 0 to count - 1 bound to it in their order, each
 * with weight 1, as the partitions' own topology binds them. The hash exchange itself is not in it (declared apart,
 * on a connection of its own: hash-exchange.probe.ts).
 */
export function hashExchangeBindings(config: HandlerConfig): TopologyPlan {
  const parts = partitionConfigs(config);
  const hashExchange = partitionNames(config.queue).hashExchange;
  const upstream = parts[0]?.upstream;
  const fed = upstream
    ? upstream.routingKeys.map((pattern) => ({ source: upstream.exchange, destination: hashExchange, destinationType: 'exchange' as const, pattern }))
    : [];
  return {
    exchanges: upstream ? [{ name: upstream.exchange, type: upstream.exchangeType }] : [],
    queues: [],
    bindings: [
      ...fed,
      ...parts.map((part) => ({ source: hashExchange, destination: part.queue, destinationType: 'queue' as const, pattern: PARTITION_WEIGHT })),
    ],
  };
}

/** A partition's number as its queue name spells it: `0`, or digits without a leading zero. */
const PARTITION_NUMBER = /^(?:0|[1-9]\d*)$/;

/**
 * The configuration of a queue of the partitioned handler `config` other than its partitions 0 to count - 1, by its
 * name: a partition queue `<queue>.p<i>` of a larger count (one that another instance runs in a rolling change, or a
 * retired one), as partition i of that count has it, or `<queue>` itself (the handler's queue before partitions);
 * undefined for any other name. The dead-letter queue of such a queue is the one the partitions share.
 * @example otherPartitionQueue(accWith4, 'acc.p5')?.errorQueue // 'acc.p5.error'
 */
export function otherPartitionQueue(config: HandlerConfig, name: string): HandlerConfig | undefined {
  const partitions = config.partitions;
  if (partitions === undefined) return undefined;
  if (name === config.queue) return { ...config, partitions: undefined };
  const prefix = `${config.queue}.p`;
  const number = name.startsWith(prefix) ? name.slice(prefix.length) : '';
  if (!PARTITION_NUMBER.test(number)) return undefined;
  const index = Number(number);
  if (index < partitions.count || index >= MAX_PARTITIONS) return undefined;
  return partitionConfigs({ ...config, partitions: { ...partitions, count: index + 1 } })[index];
}

/**
 * A running instance as it announces itself: its member id, its `count` (it runs partitions 0 to count - 1), if it
 * says, and `ready: false` while it has not taken its first share.
 */
export interface PartitionMember {
  id: string;
  count?: number;
  /** False: it is starting and owns none yet (its owners keep its share until it is there to take it). */
  ready?: boolean;
}

/**
 * The owner of each partition, 0 to the largest count among `members` - 1: partition i goes to the members that run it
 * (i below their count), sorted by id, the (i mod n)th of them; the same answer from the same view. With one count for
 * every member that is partition i to member i mod k. With two (a count changed in a rolling deploy) a partition goes
 * only to a member that has a queue of that number to consume, never to one that does not know it exists; a member
 * that did not say its count owns none, nor one that is not ready. A member listed twice counts once, as its last entry.
 */
export function partitionOwners(members: readonly PartitionMember[]): Array<string | undefined> {
  const byId = new Map(members.map((m) => [m.id, m.ready === false ? 0 : (m.count ?? 0)]));
  const sorted = [...byId.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  let total = 0; // not Math.max(...values): spread arguments overflow the stack past about 100,000
  for (const count of byId.values()) total = Math.max(total, count);
  return Array.from({ length: total }, (_, i) => {
    const running = sorted.filter(([, count]) => i < count);
    return running[i % running.length][0];
  });
}

/** Which of its partitions `self` consumes in the view of `members` (itself counted, as it is, whether listed or not). */
export function assignPartitions(members: readonly PartitionMember[], self: PartitionMember): number[] {
  const owners = partitionOwners([...members, self]);
  return owners.flatMap((owner, i) => (owner === self.id && i < (self.count ?? 0) ? [i] : []));
}
