import { ObserverHub } from './observer.hub.js';
import type { DeliveryEvent, RetryObserver } from './retry.observer.js';

const logger = () => {
  const errors: string[] = [];
  return { errors, log: () => undefined, warn: () => undefined, debug: () => undefined, error: (m: string) => errors.push(m) };
};
const delivery = { queue: 'q', attempt: 1, maxAttempts: 3, deaths: [] } as unknown as DeliveryEvent;

describe('ObserverHub', () => {
  it('is inactive without observers, so callers build no event', () => {
    expect(new ObserverHub([], logger()).active).toBe(false);
    expect(new ObserverHub([{}], logger()).active).toBe(true);
  });

  it('says which per-message paths an observer asks for: handler calls, publishes, scopes', () => {
    const flags = (observer: RetryObserver) => {
      const hub = new ObserverHub([observer], logger());
      return { active: hub.active, deliveries: hub.deliveries, publishes: hub.publishes, scoping: hub.scoping };
    };
    expect(flags({ parked: () => undefined })).toEqual({ active: true, deliveries: false, publishes: false, scoping: false });
    expect(flags({ handled: () => undefined })).toEqual({ active: true, deliveries: true, publishes: false, scoping: false });
    expect(flags({ deliveryStarted: () => undefined })).toEqual({ active: true, deliveries: true, publishes: false, scoping: true });
    expect(flags({ publishRejected: () => undefined })).toEqual({ active: true, deliveries: false, publishes: true, scoping: false });
    const hub = new ObserverHub([], logger());
    hub.add({ failed: () => undefined });
    expect([hub.active, hub.deliveries, hub.publishes]).toEqual([true, true, false]);
    const counter = { countHandled: () => undefined, countFailed: () => undefined };
    hub.count(counter);
    expect(hub.counter).toBe(counter);
    expect(hub.deliveries).toBe(true); // the observer's; a counter alone turns nothing on
  });

  it('tells every counter of each handler call, two through one pair', () => {
    const hub = new ObserverHub([], logger());
    const calls: string[] = [];
    const counter = (name: string) => ({
      countHandled: (queue: string, durationMs: number) => void calls.push(`${name} handled ${queue} ${durationMs}`),
      countFailed: (queue: string, _ms: number, _error: unknown, retried: boolean) => void calls.push(`${name} failed ${queue} ${retried}`),
    });
    hub.count(counter('beat'));
    hub.count(counter('page'));
    hub.counter?.countHandled('q', 5, {} as never);
    hub.counter?.countFailed('q', 6, new Error('x'), true);
    expect(calls).toEqual(['beat handled q 5', 'page handled q 5', 'beat failed q true', 'page failed q true']);
    expect(hub.active).toBe(false);
  });

  it('calls every observer, and one that throws neither stops the others nor is logged twice', () => {
    const log = logger();
    const seen: string[] = [];
    class Broken implements RetryObserver {
      parked(): void {
        throw new Error('boom');
      }
    }
    const hub = new ObserverHub([new Broken(), { parked: (e) => seen.push(e.queue) }], log);
    const event = { queue: 'a', errorQueue: 'a.error', reason: 'exhausted', error: new Error('x'), handlerCalls: 3 } as const;
    hub.emit('parked', { ...event, message: {} as never });
    hub.emit('parked', { ...event, queue: 'b', message: {} as never });
    expect(seen).toEqual(['a', 'b']);
    expect(log.errors).toHaveLength(1);
    expect(log.errors[0]).toMatch(/RetryObserver \(Broken\) threw in parked: boom/);
  });

  it('nests the scopes around the handler and ends each with the error', async () => {
    const order: string[] = [];
    const ended: unknown[] = [];
    const scoped = (name: string): RetryObserver => ({
      deliveryStarted: () => ({
        run: (fn) => {
          order.push(`${name} in`);
          try {
            return fn();
          } finally {
            order.push(`${name} out`);
          }
        },
        end: (error) => ended.push(error),
      }),
    });
    const scope = new ObserverHub([scoped('a'), scoped('b')], logger()).deliveryStarted(delivery);
    expect(scope?.run?.(() => (order.push('handler'), 42))).toBe(42);
    const failure = new Error('handler failed');
    scope?.end?.(failure);
    expect(order).toEqual(['a in', 'b in', 'handler', 'b out', 'a out']);
    expect(ended).toEqual([failure, failure]);
  });

  it('still runs the handler once when a scope throws before it, and lets the handler own throw through', () => {
    const log = logger();
    const broken: RetryObserver = {
      deliveryStarted: () => ({
        run: () => {
          throw new Error('scope broke');
        },
        end: () => {
          throw new Error('end broke');
        },
      }),
    };
    const scope = new ObserverHub([broken], log).deliveryStarted(delivery);
    let calls = 0;
    expect(scope?.run?.(() => ++calls)).toBe(1);
    expect(calls).toBe(1);
    expect(() => scope?.end?.()).not.toThrow();
    const passing: RetryObserver = { deliveryStarted: () => ({ run: (fn) => fn() }) };
    const through = new ObserverHub([passing], log).deliveryStarted(delivery);
    expect(() =>
      through?.run?.(() => {
        throw new Error('the handler');
      }),
    ).toThrow('the handler');
    expect(log.errors).toHaveLength(1);
  });

  it("gathers every scope's headers for the failure's copy, and keeps a throwing one from touching the others", () => {
    const log = logger();
    const carrying = (key: string): RetryObserver => ({ deliveryStarted: () => ({ carry: (headers) => void (headers[key] = 'v') }) });
    const broken: RetryObserver = {
      deliveryStarted: () => ({
        carry: () => {
          throw new Error('carry broke');
        },
      }),
    };
    const scope = new ObserverHub([carrying('a'), broken, carrying('b'), { deliveryStarted: () => ({}) }], log).deliveryStarted(delivery);
    const headers: Record<string, unknown> = {};
    scope?.carry?.(headers);
    expect(headers).toEqual({ a: 'v', b: 'v' });
    expect(log.errors).toEqual([expect.stringMatching(/threw in deliveryStarted: carry broke/)]);
    const plain = new ObserverHub([{ deliveryStarted: () => ({ end: () => undefined }) }], log).deliveryStarted(delivery);
    expect(plain?.carry).toBeUndefined();
  });

  it('gives no scope when no observer makes one', () => {
    expect(new ObserverHub([{ deliveryStarted: () => undefined }], logger()).deliveryStarted(delivery)).toBeUndefined();
  });
});
