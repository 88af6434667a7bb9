// What the runner asks of a measured process (the job, in argv) and what the process answers (IPC messages).
import type { VariantOptions } from '../contenders/contender.js';

interface JobBase {
  /** The compiled module whose `contender` export is measured. */
  contenderModule: string;
  url: string;
  queue: string;
  prefetch: number;
  retryDelayMs: number;
  /** The process gives up (and reports a failure) after this long. */
  deadlineMs: number;
  /** When set, a CPU profile of the measured window is written here. */
  profileFile?: string;
  /** Options of a measured variant of this library's contenders (bench/scenarios/variants.ts). */
  variant?: VariantOptions;
}

export type Job =
  /** Start the contender (it declares its queue) and stop it at once: the queue can then be filled. */
  | (JobBase & { kind: 'declare' })
  /** Consume `messages` messages, each handled once. */
  | (JobBase & { kind: 'consume'; messages: number })
  /** Consume `messages` messages that each fail their first attempt and succeed on the retry. */
  | (JobBase & { kind: 'retry'; messages: number })
  /** Publish delayed messages with the library's RetryPublisher and measure when they arrive (see delays.job.ts). */
  | (JobBase & { kind: 'delays'; messages: number; maxDelayMs: number; blockers: number; ratePerSecond: number; ladder: 'classic' | 'quorum' })
  /**
   * Publish `messages` messages to `exchange` with `routingKey`, at most `concurrency` unconfirmed at once, or, with
   * `concurrency` null, all at once without waiting (see publish.job.ts).
   */
  | (JobBase & {
      kind: 'publish';
      exchange: string;
      routingKey: string;
      messages: number;
      concurrency: number | null;
      /** Publishes made before the window (1,000 in flight at most), so that it measures code the JIT has compiled. */
      warmUp: number;
    });

/** A window from the first delivery to the last handled message. */
export interface WindowResult {
  /** Messages handled to completion in the window. */
  messages: number;
  elapsedMs: number;
  /** User + system CPU time of the whole process over the window. */
  cpuUs: number;
  /** RSS when the first delivery arrived (the application started, nothing consumed yet). */
  rssStartBytes: number;
  /** Highest RSS sampled during the window. */
  rssPeakBytes: number;
}

export interface RetryWindowResult extends WindowResult {
  /** Per message: time between attempt 1 and attempt 2, minus the tier delay. */
  latenessMs: number[];
  /** Deliveries that do not fit "attempt 1 fails, attempt 2 succeeds" exactly once per message. */
  anomalies: string[];
}

/** A publish window: from the first publish call to the last publish settled (confirmed or rejected). */
export interface PublishWindowResult extends WindowResult {
  /** Publishes that rejected (`messages` counts every publish called, failed ones included). */
  failed: number;
  /** The first rejection's message, when there was one. */
  firstError?: string;
}

/** A delayed message not delivered this long after it was due is recorded as held back (or, in bulk, missing). */
export const HELD_BACK_AFTER_MS = 20_000;

export type DelaysJobResult =
  | { available: false; reason: string }
  | {
      available: true;
      /** Per mixed-delay message: arrival minus (publish time + delay). Negative: early. */
      latenessMs: number[];
      /** Lateness of one short-delay message published after `blockers` long-delay ones; null: held back (HELD_BACK_AFTER_MS). */
      behindLongLatenessMs: number | null;
      anomalies: string[];
    };

export type WorkerMessage = { type: 'ready' } | { type: 'result'; result: unknown } | { type: 'failed'; error: string };
