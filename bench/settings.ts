// Every knob of the bench in one place. BENCH_QUICK=1 is a smoke run: small N, one round, results kept out of
// bench/RESULTS.md. BENCH_ONLY=happy-path,memory runs a subset; BENCH_ROUNDS=n changes the number of rounds;
// BENCH_CPU_PROF=ours writes a CPU profile of the measured window of each consume, retry and publish run of that contender
// to bench/dist/profiles/.
import type { ContenderId } from './contenders/registry.js';
import { FULL_OUTAGE, SMOKE_OUTAGE } from './scenarios/outage.sizes.js';

export const SCENARIOS = ['happy-path', 'retry-path', 'delays', 'memory', 'publish', 'outbox', 'variants', 'outage'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

const quick = process.env.BENCH_QUICK === '1';
const only = process.env.BENCH_ONLY?.split(',')
  .map((s) => s.trim())
  .filter(Boolean);
const unknown = only?.filter((s) => !(SCENARIOS as readonly string[]).includes(s));
if (unknown?.length) throw new Error(`BENCH_ONLY names unknown scenario(s) ${unknown.join(', ')}; use ${SCENARIOS.join(', ')}`);

const rounds = Number(process.env.BENCH_ROUNDS ?? (quick ? 1 : 5));
if (!Number.isInteger(rounds) || rounds < 1)
  throw new Error(`BENCH_ROUNDS is "${process.env.BENCH_ROUNDS}"; use a whole number of rounds, 1 or more`);

export const settings = {
  quick,
  url: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
  scenarios: (only ?? SCENARIOS) as readonly ScenarioName[],
  cpuProfileOf: process.env.BENCH_CPU_PROF as ContenderId | undefined,
  rounds,
  /** The same for every contender. */
  prefetch: 100,
  /** One unreported raw run before the first scenario's rounds: the broker's first queue of a run is slower. */
  warmUpMessages: quick ? 500 : 5_000,
  happyPath: { messages: quick ? 2_000 : 50_000 },
  retryPath: {
    messages: quick ? 500 : 10_000,
    tierDelayMs: 200,
    /** Lateness is measured at this steady publish rate, well below what the consumer can take: see RESULTS.md. */
    pacedPerSecond: quick ? 500 : 1_000,
  },
  // The target's load: 1,000 delayed messages a second.
  delays: { messages: quick ? 500 : 10_000, maxDelayMs: quick ? 2_000 : 10_000, blockers: 1_000, ratePerSecond: 1_000 },
  memory: { backlogs: quick ? [1_000, 5_000] : [10_000, 100_000] },
  publish: {
    /** Throughput: this many publishes, at most `concurrency` awaiting their confirm at once. */
    messages: quick ? 2_000 : 50_000,
    concurrency: 1_000,
    /** Unmeasured publishes before each window, so that it measures the steady state, not the JIT's start. */
    warmUp: quick ? 200 : 5_000,
    /** Memory under a flood: this many publishes called at once, none awaited. */
    floodMessages: quick ? 10_000 : 100_000,
  },
  /** The transactional outbox (needs PostgreSQL): paced writes for commit-to-delivery latency, and a relay's drain. */
  outbox: { messages: quick ? 500 : 10_000, perSecond: Number(process.env.BENCH_OUTBOX_RATE ?? 1_000), drainRows: quick ? 2_000 : 20_000 },
  /**
   * The outage scenario (docs/outage-protection.md): one run, not rounds (it takes the outage's length). The full
   * figures of docs/outage-protection.md; BENCH_QUICK: 300 messages and a 6 s outage (a smoke run: the e2e test checks the figures). OUTAGE_N,
   * OUTAGE_RATE, OUTAGE_SECONDS and OUTAGE_START_SECONDS override them.
   */
  outage: quick ? SMOKE_OUTAGE : FULL_OUTAGE,
  /** A measured process gets a minute to start and stop, plus 1 ms per message (a contender under 1,000 msg/s fails). */
  deadlineMs: (messages: number) => 60_000 + messages,
  /** A scenario process is killed after this long. */
  scenarioDeadlineMs: quick ? 180_000 : 480_000,
};
