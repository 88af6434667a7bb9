import { RetryConfigError } from '../../errors/retry-config.error.js';
import { readDuration, readInteger, type DurationRange, refuseIllFormedText, showValue } from '../config/config.readers.js';
import { readOrdering, type OrderingConfig } from '../ordering/ordering.config.js';
import { partitionLaneKey } from './partition-key.lane.js';
import type { PartitionKey, PartitionsOptions } from '../config/retry.options.js';
import { keysOf, refuseUnknownKeys } from '../config/option-keys.js';

/** Partitions after defaults and validation. */
export interface PartitionsConfig {
  count: number;
  key: PartitionKey;
  /** The consistent-hash exchange's arguments for `key`. */
  hashArguments: Record<string, string>;
  /** Per-key order inside each partition: the `ordering` feature, keyed like the hash. */
  ordering: OrderingConfig;
  heartbeatMs: number;
}

/** Partition `index` of a partitioned handler, as a handler of its own. */
export interface PartitionOf {
  /** The partitioned handler's queue (the name the user gave). */
  queue: string;
  index: number;
  count: number;
}

export const MAX_PARTITIONS = 256;
export const DEFAULT_HEARTBEAT_MS = 1_000;
/** Heartbeats missed before an instance counts as gone. */
export const MISSED_HEARTBEATS = 3;
/** Heartbeats an instance goes without hearing its own before it counts itself deaf (fewer than the others wait). */
export const DEAF_AFTER_HEARTBEATS = 2;
const HEARTBEAT_RANGE: DurationRange = { min: 100, below: 'heartbeats that often flood the broker', max: 60_000, above: 'a minute' };

const KEYS = keysOf<PartitionsOptions>({ count: 1, key: 1, whileRetrying: 1, holdGrace: 1, heartbeat: 1 });

/** Reads a handler's `partitions`; `at(key)` names an option as the user wrote it. */
export function readPartitions(value: unknown, at: (key: string) => string): PartitionsConfig {
  if (typeof value !== 'object' || value === null) {
    throw new RetryConfigError(at('partitions'), `is ${String(value)}`, "Give { count, key }, e.g. { count: 8, key: { header: 'x-account-id' } }.");
  }
  refuseUnknownKeys(value, KEYS, 'partitions', at);
  const options = value as Partial<PartitionsOptions>;
  const count = readInteger(options.count, at('partitions.count'), 1, MAX_PARTITIONS, '8');
  const key = options.key as unknown;
  if (typeof key === 'object' && key !== null) refuseUnknownKeys(key, ['header'], 'partitions.key', at);
  const header = typeof key === 'object' && key !== null ? (key as { header?: unknown }).header : undefined;
  let hashArguments: Record<string, string>;
  if (key === 'messageId') hashArguments = { 'hash-property': 'message_id' };
  else if (typeof header === 'string' && header !== '' && Buffer.byteLength(header) <= 255) hashArguments = { 'hash-header': header };
  else {
    throw new RetryConfigError(
      at('partitions.key'),
      `is ${typeof key === 'object' ? showValue(key) : String(key)}`,
      "Give what the broker hashes: a header, { header: 'x-account-id' }, or 'messageId'. A function cannot be used: the broker routes.",
    );
  }
  if (typeof header === 'string') refuseIllFormedText(header, at('partitions.key.header'), "'x-account-id'");
  const ordering = readOrdering(
    { key: partitionLaneKey(key as PartitionKey), whileRetrying: options.whileRetrying, holdGrace: options.holdGrace },
    (k) => at(k.replace(/^ordering\./, 'partitions.')),
  );
  const heartbeatMs = readDuration(options.heartbeat, at('partitions.heartbeat'), "'1s'", HEARTBEAT_RANGE, DEFAULT_HEARTBEAT_MS);
  return { count, key: key as PartitionKey, hashArguments, ordering, heartbeatMs };
}
