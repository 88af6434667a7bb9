/**
 * A prom-client `Registry` (structurally, so that the library's types do not need prom-client installed). Pass
 * your own to keep the library's metrics apart; without one they go to prom-client's default registry.
 */
export interface MetricsRegistry {
  /** Registers one metric (prom-client's `Registry.registerMetric`). */
  registerMetric(metric: never): void;
  /** The metric of that name, if registered: the library reuses it rather than registering it twice. */
  getSingleMetric(name: string): unknown;
}

/** Options of the Prometheus metrics (`RetryModule.forRoot({ metrics })`, or `createPrometheusObserver()` without Nest). */
export interface MetricsOptions {
  /** Where the metrics are registered; default: prom-client's default registry (what `register.metrics()` serves). */
  registry?: MetricsRegistry;
  /** Buckets of the handler duration histogram, in seconds; default prom-client's (5 ms to 10 s). */
  durationBuckets?: number[];
  /**
   * Buckets of the critical time histogram (`amqp_retry_critical_time_seconds`: from a message's publish, its AMQP
   * `timestamp`, to its handling), in seconds; default 10 ms to 6 hours.
   */
  criticalTimeBuckets?: number[];
}
