import type { QueueState } from '../../breaker/queue.state.js';

/** Why a circuit breaker is open: what opened it, when, and its trials since. */
export interface BreakerCause {
  /** The failures that opened it, in words (as logged): how many, or what share of the calls, failed. */
  reason: string;
  /** The last error before it opened (credentials masked); '' when unknown. */
  error: string;
  /** When it opened (epoch ms). */
  openedAt: number;
  /** Half-open trial rounds since it first opened that failed (it opened again). */
  failedTrials: number;
  /** When it half-opens next (epoch ms), while open. */
  nextTrialAt?: number;
}

/** The counts a heartbeat carries per queue, summed over its interval; `failed`: handler calls that threw (retried or parked). */
export const BEAT_COUNTS = ['handled', 'retried', 'parked', 'failed'] as const;

/** What one queue did since the previous beat (HeartbeatCollector.drain). */
export interface QueueBeatCounts extends Record<(typeof BEAT_COUNTS)[number], number> {
  /** Handler call durations, counts per LATENCY_BOUNDS_MS bucket. */
  processing: number[];
  /** Publish timestamp to handled, counts per LATENCY_BOUNDS_MS bucket (messages with a timestamp only). */
  critical: number[];
}

/** One queue of an instance as its heartbeat tells it: state, and what it did since the previous beat. */
export interface HeartbeatQueue extends QueueBeatCounts {
  queue: string;
  /** Whether this instance consumes it now. */
  consuming: boolean;
  state: QueueState;
  /** Partitions of a partitioned handler this instance consumes (their numbers). */
  partitions?: number[];
  /** While the circuit is open or half-open: why. */
  breaker?: BreakerCause;
}

/** Who beats. */
export interface HeartbeatIdentity {
  /** Unique per process start: host, pid and a random suffix. */
  id: string;
  host: string;
  pid: number;
  /** The application's version (npm_package_version), '' when unknown. */
  version: string;
  /** When the instance started beating (epoch ms). */
  startedAt: number;
}

/** A heartbeat: one instance's identity, queues and counters since its previous beat. */
export interface Heartbeat {
  v: 1;
  application: string;
  instance: HeartbeatIdentity;
  /** Increases by one per beat of this instance: a beat seen twice is counted once. */
  seq: number;
  /** When it was sent (epoch ms, the sender's clock). */
  sentAt: number;
  /** The sender's beat interval (ms). */
  intervalMs: number;
  queues: HeartbeatQueue[];
}
