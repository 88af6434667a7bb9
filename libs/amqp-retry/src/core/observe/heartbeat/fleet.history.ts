import type { QueueState } from '../../breaker/queue.state.js';
import type { BreakerCause, Heartbeat, HeartbeatIdentity } from './heartbeat.types.js';
import { LATENCY_BUCKETS, latencyQuantile } from './latency.histogram.js';
import { BEAT_COUNTS } from './heartbeat.types.js';

/**
 * The bounds of what the page's instance keeps from heartbeats (FleetHistory), and their defaults: at most about 4 MB
 * of history (128 queues x 70 minutes x 46 numbers).
 * - maxInstances: instances kept (up and gone); a new one past it replaces the gone one seen longest ago, else is ignored.
 * - maxQueues: queues with history; a queue past it gets none.
 * - historyMinutes: minutes of history per queue (one-minute buckets).
 * - missedBeats: beats an instance may miss before it shows as gone.
 * - forgetAfterMs: a gone instance is forgotten this long after its last beat.
 */
const FLEET_LIMITS = { maxInstances: 64, maxQueues: 128, historyMinutes: 70, missedBeats: 3, forgetAfterMs: 3_600_000 };

export type FleetLimits = Record<keyof typeof FLEET_LIMITS, number>;

/** An instance as the page shows it. */
export interface FleetInstance extends HeartbeatIdentity {
  status: 'up' | 'gone';
  firstSeen: number;
  lastSeen: number;
  /** When it was declared gone: its last beat plus `missedBeats` intervals. */
  goneAt?: number;
  intervalMs: number;
  queues: Array<{ queue: string; consuming: boolean; state: QueueState; partitions?: number[]; breaker?: BreakerCause }>;
}

/**
 * One minute of one queue, summed over every instance: its BEAT_COUNTS, the minute's start (`at`, epoch ms), and the
 * percentiles (ms, bucket bounds) of processing and critical time, absent when nothing was timed.
 */
export type HistoryPoint = ReturnType<typeof pointOf>;

export type Percentiles = Record<'p50' | 'p95' | 'p99', number>;

export interface QueueHistory {
  queue: string;
  points: HistoryPoint[];
}

/**
 * "Is anything wrong, and where?" from the heartbeats: instances up and gone, the queues whose breaker is open or
 * half-open (`breakersOpen`) or that are paused on an instance that is up, the messages parked in the last hour, and the
 * queue with the highest p95 processing time over the last hour (`slowest`), if any was timed.
 */
export type FleetSummary = ReturnType<FleetHistory['summaryAt']>;

/** One minute of one queue: its counts and its two histograms, summed as beats arrive. */
interface Bucket extends Record<(typeof BEAT_COUNTS)[number], number> {
  minute: number;
  processing: Float64Array;
  critical: Float64Array;
}

interface Known extends Pick<FleetInstance, 'firstSeen' | 'lastSeen' | 'intervalMs' | 'queues'> {
  identity: HeartbeatIdentity;
  seq: number;
}

const MINUTE = 60_000;
const NO_COUNTS = { handled: 0, retried: 0, parked: 0, failed: 0 } as const;
/** The shortest beat interval taken (a smaller one reads as this), so that a beat cannot show gone at once. */
const MIN_INTERVAL_MS = 250;

/**
 * The application's instances and per-queue history from their heartbeats, in memory within FleetLimits. Pure: the
 * caller gives the times. A beat of an instance with no higher seq is ignored; queues outside `inScope` are dropped,
 * and a beat with none inside is another application's (one that shares the broker user and the heartbeat key): it is
 * not kept, so such instances neither show nor take the places of the application's own.
 */
export class FleetHistory {
  private readonly instances = new Map<string, Known>();
  private readonly history = new Map<string, Bucket[]>();
  readonly limits: FleetLimits;

  constructor(
    limits: Partial<FleetLimits> = {},
    private readonly inScope: (queue: string) => boolean = () => true,
  ) {
    this.limits = { ...FLEET_LIMITS, ...limits };
  }

  /**
   * Takes a decoded heartbeat received at `now`; false when ignored (a duplicate, another application's, or past the
   * instance cap). `own`: the beat of the instance that keeps this history, kept even when it names no queue (a page
   * served without handlers).
   */
  accept(beat: Heartbeat, now: number, own = false): boolean {
    this.forget(now);
    const known = this.instances.get(beat.instance.id);
    if (known && beat.seq <= known.seq) return false;
    const queues = beat.queues.filter((q) => this.inScope(q.queue));
    if (queues.length === 0 && !own) return false;
    if (!known && this.instances.size >= this.limits.maxInstances && !this.evictGone(now)) return false;
    const entry: Known = {
      identity: { ...beat.instance },
      firstSeen: known?.firstSeen ?? now,
      lastSeen: now,
      seq: beat.seq,
      intervalMs: Math.max(MIN_INTERVAL_MS, beat.intervalMs),
      queues: queues.map(({ queue, consuming, state, partitions, breaker }) => ({
        queue,
        consuming,
        state,
        ...(partitions && { partitions }),
        ...(breaker && { breaker }),
      })),
    };
    this.instances.set(beat.instance.id, entry);
    const minute = Math.floor(now / MINUTE) * MINUTE;
    for (const q of queues) {
      if (q.handled + q.retried + q.parked + q.failed === 0 && !this.history.has(q.queue)) continue;
      const bucket = this.bucketOf(q.queue, minute);
      if (!bucket) continue;
      for (const key of BEAT_COUNTS) bucket[key] += q[key];
      for (let i = 0; i < LATENCY_BUCKETS; i++) {
        bucket.processing[i] += q.processing[i];
        bucket.critical[i] += q.critical[i];
      }
    }
    return true;
  }

  /** Every instance kept, up first, then gone by last seen. */
  instancesAt(now: number): FleetInstance[] {
    this.forget(now);
    return [...this.instances.values()]
      .map(({ identity, seq: _seq, ...seen }): FleetInstance => {
        const goneAt = seen.lastSeen + this.limits.missedBeats * seen.intervalMs;
        const up = now < goneAt;
        return { ...identity, status: up ? 'up' : 'gone', ...seen, ...(!up && { goneAt }) };
      })
      .sort((a, b) => (a.status === b.status ? b.lastSeen - a.lastSeen : a.status === 'up' ? -1 : 1));
  }

  /** Each queue's minutes of the last `minutes` (at most historyMinutes), oldest first, empty minutes included as zeros. */
  historyAt(now: number, minutes = 60): QueueHistory[] {
    const span = Math.min(Math.max(1, Math.floor(minutes)), this.limits.historyMinutes);
    const last = Math.floor(now / MINUTE) * MINUTE;
    const first = last - (span - 1) * MINUTE;
    return [...this.history.entries()]
      .map(([queue, buckets]) => {
        const byMinute = new Map(buckets.map((b) => [b.minute, b]));
        const points: HistoryPoint[] = [];
        for (let at = first; at <= last; at += MINUTE) {
          const b = byMinute.get(at);
          points.push(b ? pointOf(b) : { at, ...NO_COUNTS });
        }
        return { queue, points };
      })
      .sort((a, b) => a.queue.localeCompare(b.queue));
  }

  summaryAt(now: number) {
    const instances = this.instancesAt(now);
    const up = instances.filter((i) => i.status === 'up');
    const distinct = (pick: (q: FleetInstance['queues'][number]) => boolean) =>
      [...new Set(up.flatMap((i) => i.queues.filter(pick).map((q) => q.queue)))].sort();
    let parkedLastHour = 0;
    let slowest: { queue: string; p95: number } | undefined;
    const since = now - 60 * MINUTE;
    for (const [queue, buckets] of this.history) {
      const processing = new Float64Array(LATENCY_BUCKETS);
      for (const b of buckets) {
        if (b.minute < since - MINUTE) continue;
        parkedLastHour += b.parked;
        for (let i = 0; i < LATENCY_BUCKETS; i++) processing[i] += b.processing[i];
      }
      const p95 = latencyQuantile(processing, 0.95);
      if (p95 !== undefined && (!slowest || p95 > slowest.p95)) slowest = { queue, p95 };
    }
    return {
      up: up.length,
      gone: instances.length - up.length,
      breakersOpen: distinct((q) => q.state === 'open' || q.state === 'half-open'),
      paused: distinct((q) => q.state === 'paused'),
      parkedLastHour,
      ...(slowest && { slowest }),
    };
  }

  /** The bucket of `queue` for `minute`, made when missing; undefined past the queue cap. Old minutes are dropped. */
  private bucketOf(queue: string, minute: number): Bucket | undefined {
    let buckets = this.history.get(queue);
    if (!buckets) {
      if (this.history.size >= this.limits.maxQueues) return undefined;
      this.history.set(queue, (buckets = []));
    }
    let bucket = buckets.find((b) => b.minute === minute);
    if (!bucket) {
      bucket = { minute, ...NO_COUNTS, processing: new Float64Array(LATENCY_BUCKETS), critical: new Float64Array(LATENCY_BUCKETS) };
      buckets.push(bucket);
      buckets.sort((a, b) => a.minute - b.minute);
      const oldest = minute - (this.limits.historyMinutes - 1) * MINUTE;
      while (buckets.length > 0 && buckets[0].minute < oldest) buckets.shift();
    }
    return bucket;
  }

  private forget(now: number): void {
    for (const [id, k] of this.instances) if (now - k.lastSeen > this.limits.forgetAfterMs) this.instances.delete(id);
  }

  /** Makes room by dropping the gone instance seen longest ago; false when every instance is up. */
  private evictGone(now: number): boolean {
    let oldest: Known | undefined;
    for (const k of this.instances.values()) {
      const gone = now >= k.lastSeen + this.limits.missedBeats * k.intervalMs;
      if (gone && (!oldest || k.lastSeen < oldest.lastSeen)) oldest = k;
    }
    return oldest !== undefined && this.instances.delete(oldest.identity.id);
  }
}

function pointOf(b: Bucket) {
  const { handled, retried, parked, failed } = b;
  const processing = percentiles(b.processing);
  const critical = percentiles(b.critical);
  return { at: b.minute, handled, retried, parked, failed, ...(processing && { processing }), ...(critical && { critical }) };
}

function percentiles(counts: Float64Array): Percentiles | undefined {
  const p50 = latencyQuantile(counts, 0.5);
  if (p50 === undefined) return undefined;
  return { p50, p95: latencyQuantile(counts, 0.95) as number, p99: latencyQuantile(counts, 0.99) as number };
}
