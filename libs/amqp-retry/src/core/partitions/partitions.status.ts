// Types only: the page's browser code imports them.

/** One partition as this instance sees it. */
export interface PartitionStatus {
  /** The partition's queue. */
  queue: string;
  /** The partition's number, from 0. */
  index: number;
  /** The member that owns it in this instance's view; `mine`: this instance. */
  owner?: string;
  /** Whether this instance owns it. */
  mine: boolean;
  /** Whether this instance owns it and its consumer is subscribed (false while a start failed: tried each heartbeat). */
  consuming: boolean;
  /** Ready messages, as the broker last said (each heartbeat); undefined before the first look. */
  depth?: number;
  /** Consumers of the partition's queue, as the broker last said; undefined before the first look. */
  consumers?: number;
}

/** A partitioned handler as this instance sees it. */
export interface PartitionsStatus {
  /** The partitioned handler's queue. */
  queue: string;
  /** This instance's name in the membership. */
  member: string;
  /** The members this instance sees, itself included. */
  members: string[];
  /** Its partitions, from 0. */
  partitions: PartitionStatus[];
}
