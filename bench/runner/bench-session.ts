import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { CONTENDERS, type ContenderId, type ContenderInfo } from '../contenders/registry.js';
import { settings } from '../settings.js';
import type { Job } from '../worker/protocol.js';
import { BenchBroker, type Names } from './bench-broker.js';
import { startMeasuredRun, type MeasuredRun } from './measured-run.js';

/** Where BENCH_CPU_PROF puts its profiles (gitignored with the rest of bench/dist). */
const PROFILE_DIR = join(import.meta.dirname, '..', 'profiles');

function publisherModuleOf(id: ContenderId): string {
  const module = CONTENDERS[id].publisherModule;
  if (!module) throw new Error(`${CONTENDERS[id].label} has no publisher for the publish scenario`);
  return module;
}

/** What a scenario gives for a job; the rest comes from the settings (the deadline too, unless given). */
type JobFields<K extends Job['kind']> = Omit<
  Extract<Job, { kind: K }>,
  'kind' | 'url' | 'prefetch' | 'retryDelayMs' | 'deadlineMs' | 'contenderModule'
> & {
  deadlineMs?: number;
};

/**
 * One scenario's hold on the broker and its measured processes. Whatever it declares is registered before it is
 * declared and deleted when the run ends, whether it succeeded or not; `abort()` (on a signal) kills the live
 * processes and deletes what is still registered.
 */
export class BenchSession {
  private readonly live = new Set<MeasuredRun<unknown>>();
  private readonly registered = new Set<Names>();

  private constructor(readonly broker: BenchBroker) {}

  static async open(): Promise<BenchSession> {
    return new BenchSession(await BenchBroker.connect(settings.url));
  }

  /** `bench.<parts>.<8 hex>`: unique per run, and easy to find on the broker if something survives. */
  static uniqueName(...parts: string[]): string {
    return ['bench', ...parts, randomUUID().slice(0, 8)].join('.');
  }

  /** Runs `work` on a fresh queue for `contender`, deleting every name it may declare afterwards. */
  async withFreshQueue<T>(scenario: string, contender: ContenderInfo, work: (queue: string) => Promise<T>): Promise<T> {
    const queue = BenchSession.uniqueName(scenario, contender.id);
    return this.withNames(contender.namesFor(queue), () => work(queue));
  }

  async withNames<T>(names: Names, work: () => Promise<T>): Promise<T> {
    this.registered.add(names);
    try {
      return await work();
    } finally {
      // A failed deletion is reported but does not hide the outcome of the run itself.
      await this.broker.delete(names).then(
        () => this.registered.delete(names),
        (error: unknown) =>
          console.error(
            `Could not delete ${[...names.queues, ...(names.planQueue ? [names.planQueue] : []), ...names.exchanges].join(', ')}: ${error instanceof Error ? error.message : String(error)}`,
          ),
      );
    }
  }

  /**
   * Runs one measured process of `contender` to its result. `whenReady` runs once the contender consumes (to publish
   * while it does); if it fails, the process is killed.
   */
  async measure<R, K extends Job['kind']>(kind: K, contenderId: ContenderId, fields: JobFields<K>, whenReady?: () => Promise<void>): Promise<R> {
    const job = {
      kind,
      contenderModule: kind === 'publish' ? publisherModuleOf(contenderId) : CONTENDERS[contenderId].module,
      url: settings.url,
      prefetch: settings.prefetch,
      retryDelayMs: settings.retryPath.tierDelayMs,
      deadlineMs: settings.deadlineMs('messages' in fields ? Number(fields.messages) : 0),
      ...fields,
    } as Job;
    if (settings.cpuProfileOf === contenderId && (kind === 'consume' || kind === 'retry' || kind === 'publish')) {
      mkdirSync(PROFILE_DIR, { recursive: true });
      job.profileFile = join(PROFILE_DIR, `${job.queue}.cpuprofile`);
      console.log(`CPU profile of the measured window: ${job.profileFile}`);
    }
    const run = startMeasuredRun<R>(job);
    this.live.add(run);
    try {
      if (whenReady) {
        await run.ready;
        await whenReady();
      }
      return await run.result;
    } catch (error) {
      run.kill();
      throw error;
    } finally {
      this.live.delete(run);
    }
  }

  /**
   * Fails unless every queue of `names` exists and is empty: nothing was left unacked, parked or retrying. A plan
   * record must list only tiers among them: one that names others means the bench's idea of the library's names is
   * out of date, and would otherwise check queues that are not there (or miss ones that are).
   */
  async expectDrained(names: Names): Promise<void> {
    if (names.planQueue) {
      const unexpected = (await this.broker.planTiers(names.planQueue)).filter((tier) => !names.queues.includes(tier));
      if (unexpected.length)
        throw new Error(
          `${names.planQueue} lists tier queue(s) ${unexpected.join(', ')}, which the bench did not expect (${names.queues.join(', ')})`,
        );
    }
    for (const queue of names.queues) {
      const depth = await this.broker.depth(queue);
      if (depth === undefined) throw new Error(`${queue} does not exist after the run`);
      if (depth !== 0) throw new Error(`${queue} holds ${depth} messages after the run; expected 0`);
    }
  }

  async abort(): Promise<void> {
    for (const run of this.live) run.kill();
    for (const names of this.registered) await this.broker.delete(names).catch(() => undefined);
    await this.close();
  }

  async close(): Promise<void> {
    await this.broker.close();
  }
}
