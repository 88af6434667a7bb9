// Scenario 4, memory: peak RSS of the consuming process while it works through a backlog, at two backlog sizes.
// With a prefetch of 100 the client never holds more than 100 messages, so a consumer that keeps nothing per
// message has the same peak at both sizes; growth with the backlog means something is kept.
// Run alone: node bench/dist/scenarios/memory.scenario.js
import { CONTENDERS, type ContenderId } from '../contenders/registry.js';
import { fixed, int, mb } from '../report/format.js';
import { progress, roundOrder, runScenario, warmUp } from '../runner/scenario-process.js';
import { consumeBacklog } from '../runner/runs.js';
import { spread } from '../runner/stats.js';
import { settings } from '../settings.js';
import type { WindowResult } from '../worker/protocol.js';
import type { MemoryResult } from './results.js';

const ORDER: ContenderId[] = ['ours', 'raw'];

runScenario('memory', async (session): Promise<MemoryResult> => {
  const { backlogs } = settings.memory;
  await warmUp(session);
  const measured: Array<{ id: ContenderId; backlog: number; result: WindowResult }> = [];
  for (let round = 1; round <= settings.rounds; round++) {
    for (const backlog of backlogs) {
      for (const id of roundOrder(ORDER, round)) {
        const r = await consumeBacklog(session, 'memory', id, backlog);
        measured.push({ id, backlog, result: r });
        progress(
          'memory',
          round,
          `${CONTENDERS[id].label.padEnd(28)} backlog ${int(backlog).padStart(7)}  RSS ${fixed(mb(r.rssStartBytes))} MB at start, ${fixed(mb(r.rssPeakBytes))} MB peak`,
        );
      }
    }
  }
  return {
    rounds: settings.rounds,
    rows: ORDER.flatMap((id) =>
      backlogs.map((backlog) => {
        const rs = measured.filter((m) => m.id === id && m.backlog === backlog).map((m) => m.result);
        return {
          id,
          label: CONTENDERS[id].label,
          package: CONTENDERS[id].package(),
          backlog,
          rssStartMb: spread(rs.map((r) => mb(r.rssStartBytes))),
          rssPeakMb: spread(rs.map((r) => mb(r.rssPeakBytes))),
        };
      }),
    ),
  };
});
