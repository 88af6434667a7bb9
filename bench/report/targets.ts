/** The targets the report checks and the chart marks. */
export const TARGETS = {
  /** Happy-path throughput of this library relative to raw amqplib acking as the library does, at least. */
  rawRatio: 0.95,
  /** Happy-path CPU per message of this library relative to that same baseline, at most. */
  rawCpuRatio: 1.1,
  /** p99 lateness of a retry (and of a delayed message), under. */
  latenessP99Ms: 50,
  /** Peak RSS at the largest backlog over the smallest, at most: "flat in backlog size". */
  memoryGrowth: 1.1,
};
