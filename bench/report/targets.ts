/** The targets of issue 5, which the report checks and the chart marks. */
export const TARGETS = {
  /** Happy-path throughput of this library relative to raw amqplib acking as the library does, at least. */
  rawRatio: 0.9,
  /** p99 lateness of a retry (and of a delayed message), under. */
  latenessP99Ms: 50,
  /** Peak RSS at the largest backlog over the smallest, at most: "flat in backlog size". */
  memoryGrowth: 1.1,
};
