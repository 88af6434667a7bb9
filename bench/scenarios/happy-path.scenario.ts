// Scenario 1, the happy path: a pre-filled queue consumed and acked, one handler call per message, by this
// library and by the alternatives a Nest application would pick. Two raw amqplib baselines: one acking as the
// library does (one `multiple` ack per event-loop turn), the headline comparison, and one acking each message, as
// most code does. Run alone: node bench/dist/scenarios/happy-path.scenario.js
import { CONTENDERS, type ContenderId } from '../contenders/registry.js';
import { fixed, int, mb } from '../report/format.js';
import { progress, roundOrder, runScenario, warmUp } from '../runner/scenario-process.js';
import { consumeBacklog } from '../runner/runs.js';
import { cpuPerMessageOf, spread, throughputOf } from '../runner/stats.js';
import { settings } from '../settings.js';
import type { WindowResult } from '../worker/protocol.js';
import type { HappyPathResult } from './results.js';

/** Measured in this order in round 1, rotated by one a round after; ratios compare contenders of the same round. */
const ORDER: ContenderId[] = ['ours', 'raw-coalesced', 'raw', 'golevelup', 'nest-rmq', 'ours-transport'];

runScenario('happy-path', async (session): Promise<HappyPathResult> => {
  const { messages } = settings.happyPath;
  await warmUp(session);
  const rounds: Array<Record<ContenderId, WindowResult>> = [];
  for (let round = 1; round <= settings.rounds; round++) {
    const results = {} as Record<ContenderId, WindowResult>;
    for (const id of roundOrder(ORDER, round)) {
      const r = (results[id] = await consumeBacklog(session, 'happy', id, messages));
      progress(
        'happy-path',
        round,
        `${CONTENDERS[id].label.padEnd(28)} ${int(throughputOf(r)).padStart(7)} msg/s  ${fixed(cpuPerMessageOf(r)).padStart(5)} µs CPU/msg`,
      );
    }
    rounds.push(results);
  }
  return {
    messages,
    rounds: rounds.length,
    rows: ORDER.map((id) => ({
      id,
      label: CONTENDERS[id].label,
      package: CONTENDERS[id].package(),
      throughput: spread(rounds.map((r) => throughputOf(r[id]))),
      cpuUsPerMessage: spread(rounds.map((r) => cpuPerMessageOf(r[id]))),
      throughputVsCoalesced: spread(rounds.map((r) => throughputOf(r[id]) / throughputOf(r['raw-coalesced']))),
      cpuVsCoalesced: spread(rounds.map((r) => cpuPerMessageOf(r[id]) / cpuPerMessageOf(r['raw-coalesced']))),
      throughputVsRaw: spread(rounds.map((r) => throughputOf(r[id]) / throughputOf(r.raw))),
      cpuVsRaw: spread(rounds.map((r) => cpuPerMessageOf(r[id]) / cpuPerMessageOf(r.raw))),
      oursVsThis: spread(rounds.map((r) => throughputOf(r.ours) / throughputOf(r[id]))),
      rssPeakMb: spread(rounds.map((r) => mb(r[id].rssPeakBytes))),
    })),
    // The transport against Nest's own: the same envelope, pattern, prefetch and work, in the same round.
    transportVsNest: {
      throughput: spread(rounds.map((r) => throughputOf(r['ours-transport']) / throughputOf(r['nest-rmq']))),
      cpu: spread(rounds.map((r) => cpuPerMessageOf(r['ours-transport']) / cpuPerMessageOf(r['nest-rmq']))),
    },
  };
});
