// Scenario 2, the retry path: every message fails its first attempt and succeeds on the retry, through one
// 200 ms tier. Two runs per contender and round:
//   backlog: the queue is pre-filled, so the figure is how fast failures can be cycled through the broker;
//   paced:   messages arrive at a steady rate the consumer keeps up with, so the gap between the attempts is the
//            retry mechanism's own lateness, not time spent queued behind a backlog.
// Raw amqplib has no retry; a hand-rolled DLX+TTL loop on raw amqplib is the reference.
// Run alone: node bench/dist/scenarios/retry-path.scenario.js
import { CONTENDERS, type ContenderId } from '../contenders/registry.js';
import { fixed, int } from '../report/format.js';
import { progress, roundOrder, runScenario, warmUp } from '../runner/scenario-process.js';
import { retryEach } from '../runner/runs.js';
import { cpuPerMessageOf, latenessSpread, percentile, spread, throughputOf } from '../runner/stats.js';
import { settings } from '../settings.js';
import type { RetryWindowResult } from '../worker/protocol.js';
import type { RetryPathResult } from './results.js';

const ORDER: ContenderId[] = ['ours', 'raw-dlx'];

type Runs = Record<ContenderId, RetryWindowResult>;

runScenario('retry-path', async (session): Promise<RetryPathResult> => {
  const { messages, tierDelayMs, pacedPerSecond } = settings.retryPath;
  await warmUp(session);
  const rounds: Array<{ backlog: Runs; paced: Runs }> = [];
  for (let round = 1; round <= settings.rounds; round++) {
    const backlog = {} as Runs;
    const paced = {} as Runs;
    for (const id of roundOrder(ORDER, round)) {
      const r = (backlog[id] = await retryEach(session, 'retry', id, messages, 'backlog'));
      progress(
        'retry-path',
        round,
        `${CONTENDERS[id].label.padEnd(28)} backlog ${int(throughputOf(r)).padStart(6)} msg/s  ${fixed(cpuPerMessageOf(r)).padStart(5)} µs CPU/msg`,
      );
    }
    for (const id of roundOrder(ORDER, round)) {
      const r = (paced[id] = await retryEach(session, 'retry', id, messages, 'paced'));
      const p = (q: number) => fixed(percentile(r.latenessMs, q));
      progress('retry-path', round, `${CONTENDERS[id].label.padEnd(28)} paced   lateness p50 ${p(50)} p95 ${p(95)} p99 ${p(99)} max ${p(100)} ms`);
    }
    rounds.push({ backlog, paced });
  }
  return {
    messages,
    rounds: rounds.length,
    tierDelayMs,
    pacedPerSecond,
    rows: ORDER.map((id) => ({
      id,
      label: CONTENDERS[id].label,
      package: CONTENDERS[id].package(),
      throughput: spread(rounds.map((r) => throughputOf(r.backlog[id]))),
      cpuUsPerMessage: spread(rounds.map((r) => cpuPerMessageOf(r.backlog[id]))),
      lateness: latenessSpread(rounds.map((r) => r.paced[id].latenessMs)),
    })),
  };
});
