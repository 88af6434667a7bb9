import { RetryConfigError } from '../errors/retry-config.error.js';
import { createPrometheusObserver } from './metrics.factory.js';
import type { MetricsOptions } from './metrics.options.js';
import type { RetryObserver } from './retry-observer.js';

/** The observability part of the module options. */
export interface ObservabilityOptions {
  observers?: RetryObserver[];
  metrics?: boolean | MetricsOptions;
}

/**
 * The observers the engine reports to: the application's own, then the built-in ones it turned on, whose optional
 * dependencies are loaded only then (a missing one fails the start, naming the package to install).
 */
export async function resolveObservers(options: ObservabilityOptions): Promise<RetryObserver[]> {
  const { observers = [], metrics } = options;
  if (!Array.isArray(observers) || observers.some((o) => typeof o !== 'object' || o === null)) {
    throw new RetryConfigError(
      'RetryModule option "observers"',
      'is not an array of objects',
      'Pass an array of RetryObserver objects, e.g. [{ parked: (e) => ... }].',
    );
  }
  const resolved = [...observers];
  if (metrics !== undefined && metrics !== false) {
    if (metrics !== true && (typeof metrics !== 'object' || metrics === null)) {
      throw new RetryConfigError(
        'RetryModule option "metrics"',
        `is ${String(metrics)}`,
        'Use true, false, or { registry } with a prom-client Registry.',
      );
    }
    resolved.push(await loading('prom-client', 'metrics', () => createPrometheusObserver(metrics === true ? {} : metrics)));
  }
  return resolved;
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
