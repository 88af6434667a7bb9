// Scenario 5, publishing: RetryPublisher.publish against amqplib's confirm channel, in the publishing process.
//   throughput: `messages` persistent publishes to a durable queue behind a direct exchange, at most `concurrency`
//               awaiting their confirm (a new one starts when one settles): msg/s and CPU per message;
//   flood:      `floodMessages` publishes called at once, none awaited, as a careless caller would: peak RSS above
//               the RSS before the flood, and the time until all settled. The library means to wait for the socket
//               to drain rather than buffer, which would keep its peak flat however large the flood; raw amqplib
//               buffers all of it. The figure shows whether that holds for publishes started in one burst.
// Run alone: node bench/dist/scenarios/publish.scenario.js
import { CONTENDERS, type ContenderId } from '../contenders/registry.js';
import { fixed, int, mb } from '../report/format.js';
import { progress, roundOrder, runScenario, warmUp } from '../runner/scenario-process.js';
import { publishTo } from '../runner/runs.js';
import { cpuPerMessageOf, spread, throughputOf } from '../runner/stats.js';
import { settings } from '../settings.js';
import type { PublishWindowResult } from '../worker/protocol.js';
import type { PublishResult } from './results.js';

// raw-props: raw amqplib with the message id and `mandatory` that ours sends, the baseline doing the same work on the wire.
const ORDER: ContenderId[] = ['ours', 'raw', 'raw-props'];

type Runs = Record<ContenderId, PublishWindowResult>;

const failures = (r: PublishWindowResult) => (r.failed ? `, ${int(r.failed)} failed (${r.firstError ?? ''})` : '');

runScenario('publish', async (session): Promise<PublishResult> => {
  const { messages, concurrency, floodMessages } = settings.publish;
  const warmUpPublishes = settings.publish.warmUp;
  await warmUp(session);
  const rounds: Array<{ windowed: Runs; flood: Runs }> = [];
  for (let round = 1; round <= settings.rounds; round++) {
    const windowed = {} as Runs;
    const flood = {} as Runs;
    for (const id of roundOrder(ORDER, round)) {
      const r = (windowed[id] = await publishTo(session, id, messages, concurrency, warmUpPublishes));
      // A throughput figure over rejected publishes would flatter the contender: a failure here fails the scenario.
      if (r.failed) throw new Error(`${CONTENDERS[id].label}: ${r.failed} of ${messages} windowed publishes failed (${r.firstError ?? ''})`);
      progress(
        'publish',
        round,
        `${CONTENDERS[id].label.padEnd(28)} ${int(throughputOf(r)).padStart(7)} msg/s  ${fixed(cpuPerMessageOf(r)).padStart(5)} µs CPU/msg`,
      );
    }
    for (const id of roundOrder(ORDER, round)) {
      const r = (flood[id] = await publishTo(session, id, floodMessages, null, warmUpPublishes));
      const rss = `RSS ${fixed(mb(r.rssStartBytes))} MB before, ${fixed(mb(r.rssPeakBytes))} MB peak`;
      progress(
        'publish',
        round,
        `${CONTENDERS[id].label.padEnd(28)} flood of ${int(floodMessages)}: ${rss}, ${fixed(r.elapsedMs / 1000, 2)} s${failures(r)}`,
      );
    }
    rounds.push({ windowed, flood });
  }
  return {
    rounds: rounds.length,
    messages,
    concurrency,
    warmUp: warmUpPublishes,
    floodMessages,
    rows: ORDER.map((id) => ({
      id,
      label: CONTENDERS[id].label,
      package: CONTENDERS[id].package(),
      throughput: spread(rounds.map((r) => throughputOf(r.windowed[id]))),
      cpuUsPerMessage: spread(rounds.map((r) => cpuPerMessageOf(r.windowed[id]))),
      throughputVsRaw: spread(rounds.map((r) => throughputOf(r.windowed[id]) / throughputOf(r.windowed.raw))),
      cpuVsRaw: spread(rounds.map((r) => cpuPerMessageOf(r.windowed[id]) / cpuPerMessageOf(r.windowed.raw))),
      floodSeconds: spread(rounds.map((r) => r.flood[id].elapsedMs / 1000)),
      floodRssBeforeMb: spread(rounds.map((r) => mb(r.flood[id].rssStartBytes))),
      floodRssPeakMb: spread(rounds.map((r) => mb(r.flood[id].rssPeakBytes))),
      floodRssGrowthMb: spread(rounds.map((r) => mb(r.flood[id].rssPeakBytes - r.flood[id].rssStartBytes))),
      floodFailed: spread(rounds.map((r) => r.flood[id].failed)),
      floodFirstError: rounds.map((r) => r.flood[id].firstError).find((e) => e !== undefined),
    })),
  };
});
