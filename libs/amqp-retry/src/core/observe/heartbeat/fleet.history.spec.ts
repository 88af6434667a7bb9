import { FleetHistory } from './fleet.history.js';
import type { Heartbeat } from './heartbeat.message.js';
import { latencyBucket, LATENCY_BUCKETS } from './latency.histogram.js';

const zeros = () => new Array<number>(LATENCY_BUCKETS).fill(0);
const MINUTE = 60_000;
const T0 = 1_700_000_000_000 - (1_700_000_000_000 % MINUTE);

function beat(id: string, seq: number, queues: Partial<Heartbeat['queues'][number]>[] = [{}]): Heartbeat {
  return {
    v: 1,
    application: 'shop',
    instance: { id, host: id, pid: 1, version: '1', startedAt: 0 },
    seq,
    sentAt: 0,
    intervalMs: 5_000,
    queues: queues.map((q) => ({
      queue: 'orders',
      consuming: true,
      state: 'running',
      handled: 0,
      retried: 0,
      parked: 0,
      failed: 0,
      processing: zeros(),
      critical: zeros(),
      ...q,
    })),
  };
}

describe('Fleet history', () => {
  it('sums every instance per queue and minute, counts a beat seen twice once, and reads percentiles', () => {
    const fleet = new FleetHistory();
    const processing = zeros();
    processing[latencyBucket(30)] = 10;
    expect(fleet.accept(beat('a', 1, [{ handled: 10, processing }]), T0 + 1_000)).toBe(true);
    expect(fleet.accept(beat('a', 1, [{ handled: 10, processing }]), T0 + 2_000)).toBe(false); // the same beat again
    expect(fleet.accept(beat('b', 7, [{ handled: 5, parked: 2 }]), T0 + 3_000)).toBe(true);
    expect(fleet.accept(beat('a', 2, [{ failed: 1, retried: 1 }]), T0 + MINUTE + 1)).toBe(true);
    const [orders] = fleet.historyAt(T0 + MINUTE + 2, 3).filter((h) => h.queue === 'orders');
    expect(orders.points.map((p) => [p.at - T0, p.handled, p.parked, p.retried])).toEqual([
      [-MINUTE, 0, 0, 0],
      [0, 15, 2, 0],
      [MINUTE, 0, 0, 1],
    ]);
    expect(orders.points[1].processing).toEqual({ p50: 50, p95: 50, p99: 50 });
    expect(fleet.summaryAt(T0 + MINUTE + 2)).toMatchObject({ up: 1, gone: 1, parkedLastHour: 2, slowest: { queue: 'orders', p95: 50 } });
  });

  it('shows an instance gone once it missed its beats, with when, and forgets it after the bound', () => {
    const fleet = new FleetHistory({ missedBeats: 3, forgetAfterMs: 10 * MINUTE });
    fleet.accept(beat('a', 1), T0);
    fleet.accept(beat('b', 1), T0);
    fleet.accept(beat('a', 2), T0 + 15_000);
    const at = T0 + 15_001; // b's last beat 15 001 ms ago: three 5 s beats missed
    expect(fleet.instancesAt(at).map((i) => [i.id, i.status, i.goneAt])).toEqual([
      ['a', 'up', undefined],
      ['b', 'gone', T0 + 15_000],
    ]);
    expect(fleet.summaryAt(at)).toMatchObject({ up: 1, gone: 1 });
    expect(fleet.instancesAt(T0 + 10 * MINUTE + 1).map((i) => i.id)).toEqual(['a']);
  });

  it('keeps within its caps: instances, queues and minutes; a gone instance makes room for a new one', () => {
    const fleet = new FleetHistory({ maxInstances: 2, maxQueues: 1, historyMinutes: 2 });
    fleet.accept(beat('a', 1, [{ handled: 1 }, { queue: 'billing', handled: 1 }]), T0);
    fleet.accept(beat('b', 1), T0);
    expect(fleet.accept(beat('c', 1), T0 + 1)).toBe(false); // both up
    expect(fleet.accept(beat('c', 1), T0 + 20_000)).toBe(true); // a and b gone: the older makes room
    expect(fleet.instancesAt(T0 + 20_000)).toHaveLength(2);
    expect(fleet.historyAt(T0, 60).map((h) => h.queue)).toEqual(['orders']);
    fleet.accept(beat('c', 2, [{ handled: 1 }]), T0 + 5 * MINUTE);
    expect(fleet.historyAt(T0 + 5 * MINUTE, 60)[0].points).toHaveLength(2);
  });

  it("shows the breakers open and the queues paused on instances that are up, and drops queues out of the page's scope", () => {
    const fleet = new FleetHistory({}, (queue) => queue !== 'other-app');
    fleet.accept(
      beat('a', 1, [
        { state: 'open', breaker: { reason: '3 calls in a row failed', error: 'ECONNREFUSED', openedAt: 1, failedTrials: 0 } },
        { queue: 'other-app', handled: 9 },
      ]),
      T0,
    );
    fleet.accept(beat('b', 1, [{ queue: 'billing', state: 'paused' }]), T0);
    expect(fleet.summaryAt(T0 + 1)).toMatchObject({ breakersOpen: ['orders'], paused: ['billing'] });
    expect(fleet.instancesAt(T0 + 1).flatMap((i) => i.queues.map((q) => q.queue))).not.toContain('other-app');
    expect(fleet.historyAt(T0 + 1).map((h) => h.queue)).not.toContain('other-app');
  });

  it("lists no instance whose beat names none of the application's queues, and such instances never take its own's places", () => {
    const fleet = new FleetHistory({ maxInstances: 2 }, (queue) => queue === 'orders');
    for (let i = 0; i < 100; i++) expect(fleet.accept(beat(`foreign-${i}`, 1, [{ queue: 'other-app' }]), T0)).toBe(false);
    expect(fleet.accept(beat('a', 1), T0)).toBe(true);
    expect(fleet.accept(beat('page', 1, []), T0, true)).toBe(true); // the page's own instance, without handlers
    expect(fleet.accept(beat('b', 1, []), T0)).toBe(false); // no queue at all: nothing says it is the application's
    expect(fleet.instancesAt(T0 + 1).map((i) => i.id)).toEqual(['a', 'page']);
  });
});
