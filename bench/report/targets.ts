/** The targets the report checks and the chart marks. */
export const TARGETS = {
  /** Happy-path throughput of this library relative to raw amqplib acking as the library does, at least. */
  rawRatio: 0.95,
  /** Happy-path CPU per message of this library relative to that same baseline, at most. */
  rawCpuRatio: 1.1,
  /** p99 lateness of a retry (and of a delayed message), under. */
  latenessP99Ms: 50,
  /** p99 lateness of a delayed message on the classic ladder (1,000/s, 100 ms to 10 s), at most. */
  delayLatenessP99Ms: 20,
  /** The transport's happy-path throughput relative to the decorator path's, at least; and to Nest's ServerRMQ. */
  transportVsDecorator: 0.8,
  transportVsNest: 2,
  /** The retry path relative to a raw DLX+TTL loop: throughput at least, CPU at most, p99 lateness within (ms). */
  retryRatio: 0.95,
  retryCpuRatio: 1.1,
  retryLatenessOverRawMs: 3,
  /** RetryPublisher.publish relative to amqplib's confirm channel: throughput at least, CPU at most. */
  publishRatio: 0.9,
  publishCpuRatio: 1.3,
  /** Peak RSS under a flood of publishes relative to raw's, at most. */
  floodRssRatio: 1.5,
  /** p99 lateness of a delayed message on the quorum ladder (1,000/s), at most. */
  quorumLatenessP99Ms: 60,
  /** Peak RSS at the largest backlog over the smallest, at most: "flat in backlog size". */
  memoryGrowth: 1.1,
};
