import { RetryConfigError } from '../errors/retry-config.error.js';
import { createPrometheusObserver } from './metrics.factory.js';
import type { RetryModuleOptions } from '../core/config/retry.options.js';
import type { RetryObserver } from '../core/observe/retry.observer.js';
import { createTracingObserver } from './tracing.factory.js';
import { keysOf, refuseUnknownKeys } from '../core/config/option-keys.js';
import type { MetricsOptions } from '../core/observe/metrics.options.js';
import type { TracingOptions } from '../core/observe/tracing.options.js';

const METRICS_KEYS = keysOf<MetricsOptions>({ registry: 1, durationBuckets: 1, criticalTimeBuckets: 1 });
const TRACING_KEYS = keysOf<TracingOptions>({ tracerName: 1 });

/**
 * The observers the engine reports to: the application's own, then the built-in ones it turned on, whose optional
 * dependencies are loaded only then (a missing one fails the start, naming the package to install).
 */
export async function resolveObservers(options: Pick<RetryModuleOptions, 'observers' | 'metrics' | 'tracing'>): Promise<RetryObserver[]> {
  const { observers = [], metrics, tracing } = options;
  if (!Array.isArray(observers) || observers.some((o) => typeof o !== 'object' || o === null)) {
    throw new RetryConfigError(
      'RetryModule option "observers"',
      'is not an array of objects',
      'Pass an array of RetryObserver objects, e.g. [{ parked: (e) => ... }].',
    );
  }
  const resolved = [...observers];
  const metricsOptions = settingsOf('metrics', metrics, METRICS_KEYS, 'Use true, false, or { registry } with a prom-client Registry.');
  if (metricsOptions) resolved.push(await loading('prom-client', 'metrics', () => createPrometheusObserver(metricsOptions)));
  const tracingOptions = settingsOf('tracing', tracing, TRACING_KEYS, "Use true, false, or { tracerName: 'orders' }.");
  // Tracing comes first, so that its span is current while the other observers (and the handler) run.
  if (tracingOptions) resolved.unshift(await loading('@opentelemetry/api', 'tracing', () => createTracingObserver(tracingOptions)));
  return resolved;
}

/**
 * A built-in observer's option: undefined when off, `{}` for true, else the settings object, whose keys must be among
 * `known`; any other value is refused.
 */
function settingsOf<T extends object>(option: string, value: boolean | T | undefined, known: readonly string[], fix: string): T | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return {} as T;
  if (typeof value !== 'object' || value === null) throw new RetryConfigError(`RetryModule option "${option}"`, `is ${String(value)}`, fix);
  refuseUnknownKeys(value, known, option, (key) => `RetryModule option "${key}"`);
  return value;
}

/** Runs a loader of an optional dependency; a missing package becomes an error that says what to install. */
export async function loading<T>(pkg: string, option: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new RetryConfigError(
        `RetryModule option "${option}"`,
        `needs the package ${pkg}, which is not installed`,
        `Run npm install ${pkg}, or turn "${option}" off.`,
      );
    }
    throw error;
  }
}
