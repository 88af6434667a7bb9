// What each scenario process hands to the report: medians and ranges over rounds, ratios taken within a round.
import type { ContenderId } from '../contenders/registry.js';
import type { Spread } from '../runner/stats.js';
import type { OutageFigures } from './outage.driver.js';

export interface ContenderRef {
  id: ContenderId;
  label: string;
  /** Package and version, e.g. "@golevelup/nestjs-rabbitmq 9.0.2". */
  package: string;
}

export interface HappyPathResult {
  messages: number;
  rounds: number;
  /** Per round: RetryServer / Nest's ServerRMQ (manual acks), throughput and CPU per message. */
  transportVsNest?: { throughput: Spread; cpu: Spread };
  rows: Array<
    ContenderRef & {
      /** Messages per second from the first delivery to the last ack. */
      throughput: Spread;
      cpuUsPerMessage: Spread;
      /**
       * Per round: this contender's throughput / that of raw amqplib acking as the library does (raw-coalesced) in
       * the same round. The headline ratio: it leaves out how each acks and compares the rest.
       */
      throughputVsCoalesced: Spread;
      cpuVsCoalesced: Spread;
      /** Per round: this contender's throughput / that of raw amqplib with an ack per message in the same round. */
      throughputVsRaw: Spread;
      cpuVsRaw: Spread;
      /** Per round: our throughput / this contender's in the same round (above 1: we are ahead). */
      oursVsThis: Spread;
      rssPeakMb: Spread;
    }
  >;
}

export interface LatenessSpread {
  p50: Spread;
  p95: Spread;
  p99: Spread;
  max: Spread;
}

export interface RetryPathResult {
  messages: number;
  rounds: number;
  tierDelayMs: number;
  pacedPerSecond: number;
  rows: Array<
    ContenderRef & {
      /** Pre-filled backlog: messages completed (attempt 2 acked) per second, first delivery to last. */
      throughput: Spread;
      /** CPU per message of the backlog run: two deliveries, one nack, one ack. */
      cpuUsPerMessage: Spread;
      /** Paced run: (attempt 2 - attempt 1) - tier delay, per-round percentiles. */
      lateness: LatenessSpread;
    }
  >;
}

export type DelaysResult =
  | { available: false; reason: string }
  | {
      available: true;
      rounds: number;
      messages: number;
      maxDelayMs: number;
      blockers: number;
      lateness: LatenessSpread;
      /** Messages that arrived before their delay was up, per round. */
      early: Spread;
      /** A 100 ms message published after `blockers` one-hour ones: its lateness; null when it was held back in any round. */
      behindLongMs: Spread | null;
      /** The same on a ladder of quorum queues (`delayedDelivery: { queueType: 'quorum' }`), in the same rounds. */
      quorum?: LadderResult;
    };

/** One ladder's figures in the delays scenario. */
export interface LadderResult {
  lateness: LatenessSpread;
  early: Spread;
  behindLongMs: Spread | null;
}

export interface MemoryResult {
  rounds: number;
  rows: Array<ContenderRef & { backlog: number; rssStartMb: Spread; rssPeakMb: Spread }>;
}

export interface PublishResult {
  rounds: number;
  /** Throughput runs: this many publishes, at most `concurrency` awaiting a confirm at once. */
  messages: number;
  concurrency: number;
  /** Unmeasured publishes before each window. */
  warmUp: number;
  /** Flood runs: this many publishes called at once. */
  floodMessages: number;
  rows: Array<
    ContenderRef & {
      /** Publishes confirmed per second, first publish call to last confirm. */
      throughput: Spread;
      cpuUsPerMessage: Spread;
      /** Per round: this contender's figure / raw amqplib's in the same round. */
      throughputVsRaw: Spread;
      cpuVsRaw: Spread;
      /** Flood: first publish call to last publish settled. */
      floodSeconds: Spread;
      /** Flood: RSS just before the first publish call, the peak sampled until all settled, and the difference. */
      floodRssBeforeMb: Spread;
      floodRssPeakMb: Spread;
      floodRssGrowthMb: Spread;
      /** Flood: publishes that rejected, and the first reason seen in any round. */
      floodFailed: Spread;
      floodFirstError?: string;
    }
  >;
}

export interface OutboxResult {
  rounds: number;
  /** Latency runs: this many transactions of one outbox row each, paced at `perSecond`. */
  messages: number;
  perSecond: number;
  /** From the COMMIT call to the message's arrival at a consumer, ms: percentiles per round, then over rounds. */
  latency: { p50: Spread; p95: Spread; p99: Spread; max: Spread };
  /** Throughput runs: this many rows drained by one relay, and as many plain publishes. */
  drainRows: number;
  relayPerSecond: Spread;
  plainPerSecond: Spread;
  relayVsPlain: Spread;
}

/** The outage scenario: the same traffic and outage on a queue without a circuit breaker and one with it. */
export interface OutageResult {
  messages: number;
  ratePerSecond: number;
  outageStartMs: number;
  outageMs: number;
  delays: string[];
  maxAttempts: number;
  breaker: string;
  rows: OutageFigures[];
}

export interface ScenarioResults {
  'happy-path'?: HappyPathResult;
  'retry-path'?: RetryPathResult;
  delays?: DelaysResult;
  memory?: MemoryResult;
  publish?: PublishResult;
  outage?: OutageResult;
  outbox?: OutboxResult;
  variants?: VariantsResult;
}

/** Variants of this library's contenders (variants.ts) against the same contender with its defaults. */
export interface VariantsResult {
  messages: number;
  rounds: number;
  rows: Array<{
    id: string;
    label: string;
    /** The contender with its defaults, measured in the same rounds. */
    baseline: string;
    throughput: Spread;
    cpuUsPerMessage: Spread;
    /** Per round: the variant's / the default's. */
    throughputVsDefault: Spread;
    cpuVsDefault: Spread;
  }>;
}
