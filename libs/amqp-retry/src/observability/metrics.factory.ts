import type { MetricsOptions } from '../core/observe/metrics.options.js';
import type { RetryObserver } from '../core/observe/retry.observer.js';

/**
 * The Prometheus metrics as an observer, for use without Nest (`RetryEngine.create(options, logger, [observer])`; the
 * module's `metrics` option does this for you). prom-client is loaded here, on first call: an application without
 * metrics never loads it, and its types are not needed either.
 * @example const observer = await createPrometheusObserver({ registry });
 */
export async function createPrometheusObserver(options: MetricsOptions = {}): Promise<RetryObserver> {
  const [prom, { PrometheusObserver }] = await Promise.all([import('prom-client'), import('./prometheus.observer.js')]);
  return new PrometheusObserver(prom, options);
}
