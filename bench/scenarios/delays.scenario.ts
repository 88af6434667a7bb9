// Scenario 3, delayed delivery with RetryPublisher.publish(..., { delay }). Until the library accepts a delay, this
// prints "delays: not yet available" and measures nothing: each round starts with a probe publish, and the rest
// runs only once it is accepted (worker/delays.job.ts):
//   - `messages` messages with delays mixed from 100 ms to maxDelayMs: lateness p50/p95/p99/max, and how many
//     arrived early (must be none);
//   - one 100 ms message published after `blockers` one-hour ones: its lateness (head-of-line blocking).
// Each round measures both ladders, classic and quorum queues, in alternating order.
// Run alone: node bench/dist/scenarios/delays.scenario.js
import { int } from '../report/format.js';
import { BenchSession } from '../runner/bench-session.js';
import { progress, runScenario } from '../runner/scenario-process.js';
import { latenessSpread, percentile, spread } from '../runner/stats.js';
import { settings } from '../settings.js';
import { HELD_BACK_AFTER_MS, type DelaysJobResult } from '../worker/protocol.js';
import type { DelaysResult, LadderResult } from './results.js';

type Ladder = 'classic' | 'quorum';
/** Both ladders each round: classic queues (the default) and quorum ones (`delayedDelivery: { queueType: 'quorum' }`). */
const LADDERS: Ladder[] = ['classic', 'quorum'];

/** Start-up and publishing, then the two waits for arrivals, each at most the delay and the held-back limit. */
const deadlineMs = (maxDelayMs: number, messages: number) => 60_000 + messages + 2 * (maxDelayMs + HELD_BACK_AFTER_MS);

type Measured = Extract<DelaysJobResult, { available: true }>;

/** The figures of one ladder over the rounds. */
const ladderFigures = (rounds: Measured[]): LadderResult => ({
  lateness: latenessSpread(rounds.map((r) => r.latenessMs)),
  early: spread(rounds.map((r) => r.latenessMs.filter((l) => l < 0).length)),
  behindLongMs: rounds.every((r) => r.behindLongLatenessMs !== null) ? spread(rounds.map((r) => r.behindLongLatenessMs as number)) : null,
});

runScenario('delays', async (session): Promise<DelaysResult> => {
  const { messages, maxDelayMs, blockers, ratePerSecond } = settings.delays;
  const rounds: Record<Ladder, Measured[]> = { classic: [], quorum: [] };
  for (let round = 1; round <= settings.rounds; round++) {
    // Classic then quorum in odd rounds, the other way in even ones.
    for (const ladder of round % 2 === 1 ? LADDERS : [...LADDERS].reverse()) {
      const queue = BenchSession.uniqueName('delays', 'ours');
      const result = await session.withNames({ queues: [queue], exchanges: [] }, async () => {
        await session.broker.declareQueue(queue);
        return session.measure<DelaysJobResult, 'delays'>('delays', 'ours', {
          queue,
          messages,
          maxDelayMs,
          blockers,
          ratePerSecond,
          ladder,
          deadlineMs: deadlineMs(maxDelayMs, messages),
        });
      });
      if (!result.available) {
        console.log(`delays: not yet available (${result.reason})`);
        return { available: false, reason: result.reason };
      }
      if (result.anomalies.length > 0) throw new Error(`delayed delivery (${ladder} ladder) broke: ${result.anomalies.join('; ')}`);
      const early = result.latenessMs.filter((l) => l < 0).length;
      const behind = result.behindLongLatenessMs === null ? 'held back' : `${result.behindLongLatenessMs.toFixed(1)} ms late`;
      progress(
        'delays',
        round,
        `${ladder.padEnd(7)} ladder: p50 ${percentile(result.latenessMs, 50).toFixed(1)} p99 ${percentile(result.latenessMs, 99).toFixed(1)} ms, ${int(early)} early; 100 ms behind ${int(blockers)} one-hour: ${behind}`,
      );
      rounds[ladder].push(result);
    }
  }
  return {
    available: true,
    rounds: rounds.classic.length,
    messages,
    maxDelayMs,
    blockers,
    ...ladderFigures(rounds.classic),
    quorum: ladderFigures(rounds.quorum),
  };
});
