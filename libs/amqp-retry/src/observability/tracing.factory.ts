import type { RetryObserver } from '../core/observe/retry.observer.js';
import type { TracingOptions } from '../core/observe/tracing.options.js';

/**
 * The OpenTelemetry tracing as an observer, for use without Nest (the module's `tracing` option does this for you).
 * @opentelemetry/api is loaded here, on first call; the application registers its SDK (tracer provider, the W3C
 * propagator, a context manager) as usual, and the spans go wherever it exports them.
 */
export async function createTracingObserver(options: TracingOptions = {}): Promise<RetryObserver> {
  const [otel, { TracingObserver }] = await Promise.all([import('@opentelemetry/api'), import('./tracing.observer.js')]);
  return new TracingObserver(otel, options);
}
