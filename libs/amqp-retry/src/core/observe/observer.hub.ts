import type { ConsumeMessage } from 'amqplib';
import { errorMessage } from '../text/error-message.format.js';
import type { RetryLogger } from './retry.logger.js';
import type { DeliveryEvent, DeliveryScope, PublishingEvent, PublishScope, RetryObserver } from './retry.observer.js';

type Notification = Exclude<keyof RetryObserver, 'deliveryStarted' | 'publishing'>;

/** Counts handler calls without observer events (HeartbeatCollector): no event object is made per call. */
export interface DeliveryCounter {
  countHandled(queue: string, durationMs: number, message: ConsumeMessage): void;
  /** `retried`: the message goes to a retry tier (else it is parked). */
  countFailed(queue: string, durationMs: number, error: unknown, retried: boolean): void;
  /** The breaker counted a call's failure as an outage: told before the change of state it may cause, and before countFailed. */
  outageCounted?(queue: string, error: unknown): void;
}

/** The notifications of handler calls, and of publishes: the two that would cost something per message. */
const DELIVERY_NOTIFICATIONS = ['deliveryStarted', 'handled', 'failed'] as const;
const PUBLISH_NOTIFICATIONS = ['publishing', 'publishRejected', 'delayedPublished'] as const;
type EventOf<K extends Notification> = Parameters<NonNullable<RetryObserver[K]>>[0];

/**
 * The engine's side of the observers: calls each one, and keeps a throwing observer from touching message handling
 * (logged once per observer). Callers check `active`, `deliveries` or `publishes` before building an event.
 */
export class ObserverHub {
  /** True once there is an observer (add() may turn it on later). */
  active = false;
  /** Read at each handler call: true once an observer has `deliveryStarted`, `handled` or `failed`. */
  deliveries = false;
  /** Read at each publish: true once an observer has `publishing`, `publishRejected` or `delayedPublished`. */
  publishes = false;
  /** True once an observer has `deliveryStarted`: only then does a handler call ask for scopes. */
  scoping = false;
  /** The counters of handler calls (the heartbeat's, the page's activity), once there is one (count()). */
  counter?: DeliveryCounter;
  private readonly faulty = new Set<RetryObserver>();
  private readonly observers: RetryObserver[] = [];

  constructor(
    observers: readonly RetryObserver[],
    private readonly logger: RetryLogger,
  ) {
    for (const observer of observers) this.add(observer);
  }

  /** Adds an observer from now on (the activity counter, once the page first asks: until then it costs nothing). */
  add(observer: RetryObserver): void {
    this.observers.push(observer);
    this.active = true;
    if (DELIVERY_NOTIFICATIONS.some((name) => observer[name] !== undefined)) this.deliveries = true;
    if (PUBLISH_NOTIFICATIONS.some((name) => observer[name] !== undefined)) this.publishes = true;
    if (observer.deliveryStarted !== undefined) this.scoping = true;
  }

  /** Counts every handler call from now on with `counter` too: one counter is called as it is, two through a pair. */
  count(counter: DeliveryCounter): void {
    this.counter = this.counter === undefined ? counter : bothCounters(this.counter, counter);
  }

  emit<K extends Notification>(name: K, event: EventOf<K>): void {
    for (const observer of this.observers) {
      const method = observer[name] as ((event: EventOf<K>) => void) | undefined;
      if (method === undefined) continue;
      try {
        method.call(observer, event);
      } catch (error) {
        this.fault(observer, name, error);
      }
    }
  }

  /** Asks each observer for its scope around a handler call; undefined when none gives one. */
  deliveryStarted(event: DeliveryEvent): DeliveryScope | undefined {
    return this.scoped('deliveryStarted', event);
  }

  /** Tells each observer of a publish about to be made; the scope returned is ended with its outcome. */
  publishing(event: PublishingEvent): PublishScope | undefined {
    return this.scoped('publishing', event);
  }

  private scoped(name: 'deliveryStarted' | 'publishing', event: unknown): DeliveryScope | undefined {
    let scopes: DeliveryScope[] | undefined;
    for (const observer of this.observers) {
      const method = observer[name] as ((event: unknown) => DeliveryScope | void) | undefined;
      if (method === undefined) continue;
      try {
        const scope = method.call(observer, event);
        if (scope) (scopes ??= []).push(this.guard(observer, name, scope));
      } catch (error) {
        this.fault(observer, name, error);
      }
    }
    if (scopes === undefined) return undefined;
    if (scopes.length === 1) return scopes[0];
    const all = scopes;
    return {
      run: <T>(fn: () => T): T => all.reduceRight<() => T>((inner, scope) => () => (scope.run ? scope.run(inner) : inner()), fn)(),
      end: (error?: unknown) => all.forEach((scope) => scope.end?.(error)),
      ...(all.some((scope) => scope.carry) && { carry: (headers: Record<string, unknown>) => all.forEach((scope) => scope.carry?.(headers)) }),
    };
  }

  /** A scope whose `run` still runs the handler and whose `end` and `carry` never throw, whatever the observer does. */
  private guard(observer: RetryObserver, name: string, scope: DeliveryScope): DeliveryScope {
    const safely = (call: () => void) => {
      try {
        call();
      } catch (fault) {
        this.fault(observer, name, fault);
      }
    };
    const carry = scope.carry;
    return {
      ...(carry && { carry: (headers: Record<string, unknown>) => safely(() => carry.call(scope, headers)) }),
      run: <T>(fn: () => T): T => {
        if (!scope.run) return fn();
        let ran = false;
        try {
          return scope.run(() => ((ran = true), fn()));
        } catch (error) {
          if (ran) throw error; // the handler's own throw
          this.fault(observer, name, error);
          return fn();
        }
      },
      end: (error?: unknown) => safely(() => scope.end?.(error)),
    };
  }

  private fault(observer: RetryObserver, name: string, error: unknown): void {
    if (this.faulty.has(observer)) return;
    this.faulty.add(observer);
    const kind = (observer as { constructor?: { name?: string } }).constructor?.name ?? 'an observer';
    this.logger.error(`A RetryObserver (${kind}) threw in ${name}: ${errorMessage(error)}; its later errors are not logged`);
  }
}

/** Two counters as one: each told of every handler call. Counters only increment numbers: neither throws. */
function bothCounters(first: DeliveryCounter, second: DeliveryCounter): DeliveryCounter {
  return {
    countHandled: (...call) => (first.countHandled(...call), second.countHandled(...call)),
    countFailed: (...call) => (first.countFailed(...call), second.countFailed(...call)),
    outageCounted: (...call) => (first.outageCounted?.(...call), second.outageCounted?.(...call)),
  };
}
