import { performance } from 'node:perf_hooks';
import type { ObserverHub } from './observer.hub.js';
import type { DeliveryEvent, DeliveryScope } from './retry.observer.js';

/**
 * One handler call as the observers see it: started, run inside their scopes, then handled or failed. Created only
 * when there are observers, so the delivery path without them allocates nothing for it.
 */
export class DeliveryObservation {
  private readonly started = performance.now();
  private readonly scope?: DeliveryScope;

  constructor(
    private readonly hub: ObserverHub,
    private readonly event: DeliveryEvent,
  ) {
    this.scope = hub.deliveryStarted(event);
  }

  run<T>(fn: () => T): T {
    return this.scope?.run ? this.scope.run(fn) : fn();
  }

  handled(): void {
    this.scope?.end?.();
    this.hub.emit('handled', { ...this.event, durationMs: performance.now() - this.started });
  }

  /** `retryTier` and `retryDelayMs` when the message is retried; undefined when it is parked. */
  failed(error: unknown, retryTier?: number, retryDelayMs?: number): void {
    this.scope?.end?.(error);
    this.hub.emit('failed', { ...this.event, durationMs: performance.now() - this.started, error, retryTier, retryDelayMs });
  }
}
