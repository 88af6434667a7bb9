import { RetryConfigError } from '../errors/retry-config.error.js';
import { loading, resolveObservers } from './observers.resolve.js';

describe('resolveObservers', () => {
  it('gives the application its own observers untouched when nothing is turned on', async () => {
    const mine = { parked: () => undefined };
    expect(await resolveObservers({ observers: [mine] })).toEqual([mine]);
    expect(await resolveObservers({ metrics: false, tracing: false })).toEqual([]);
  });

  it('puts tracing first (its span is current while the others run) and metrics after the own observers', async () => {
    const mine = { parked: () => undefined };
    const resolved = await resolveObservers({
      observers: [mine],
      metrics: { registry: new (await import('prom-client')).Registry() },
      tracing: true,
    });
    expect(resolved.map((o) => o.constructor.name)).toEqual(['TracingObserver', 'Object', 'PrometheusObserver']);
  });

  it('refuses a malformed option, naming it', async () => {
    await expect(resolveObservers({ observers: 'no' as never })).rejects.toThrow(/RetryModule option "observers" is not an array/);
    await expect(resolveObservers({ observers: [null as never] })).rejects.toThrow(RetryConfigError);
    await expect(resolveObservers({ metrics: 'yes' as never })).rejects.toThrow(/RetryModule option "metrics" is yes/);
    await expect(resolveObservers({ tracing: 1 as never })).rejects.toThrow(/RetryModule option "tracing" is 1/);
  });

  it('refuses a misspelt key of metrics or tracing, naming the one it most likely meant', async () => {
    await expect(resolveObservers({ metrics: { registy: {} } as never })).rejects.toThrow(
      'Invalid retry configuration: RetryModule option "metrics.registy" is not an option of metrics. Did you mean "registry"? Use only registry, durationBuckets, criticalTimeBuckets.',
    );
    await expect(resolveObservers({ tracing: { tracer: 'orders' } as never })).rejects.toThrow(
      'RetryModule option "tracing.tracer" is not an option of tracing. Use only tracerName.',
    );
  });

  it('turns a missing optional package into an error that says what to install', async () => {
    const missing = () => Promise.reject(Object.assign(new Error("Cannot find package 'prom-client'"), { code: 'ERR_MODULE_NOT_FOUND' }));
    await expect(loading('prom-client', 'metrics', missing)).rejects.toThrow(
      'Invalid retry configuration: RetryModule option "metrics" needs the package prom-client, which is not installed. Run npm install prom-client, or turn "metrics" off.',
    );
    const other = new Error('something else');
    await expect(loading('prom-client', 'metrics', () => Promise.reject(other))).rejects.toBe(other);
  });
});
