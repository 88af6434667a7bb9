import type {
  DelaysResult,
  HappyPathResult,
  LadderResult,
  MemoryResult,
  OutageResult,
  OutboxResult,
  PublishResult,
  RetryPathResult,
  ScenarioResults,
  VariantsResult,
} from '../scenarios/results.js';
import { settings } from '../settings.js';
import { HELD_BACK_AFTER_MS } from '../worker/protocol.js';
import { fixed, int, spreadText } from './format.js';
import { TARGETS } from './targets.js';

export interface Environment {
  date: string;
  broker: string;
  node: string;
  cores: number;
  cpu: string;
}

const x = (n: number) => `${fixed(n, 2)}x`;
const ms = (n: number) => fixed(n, 1);
const verdict = (ok: boolean) => (ok ? 'met' : '**missed**');

function targets(r: ScenarioResults): string[] {
  const rows = ['| target | measured | |', '|---|---|---|'];
  const happy = r['happy-path'];
  if (happy) {
    const ours = happy.rows.find((row) => row.id === 'ours');
    if (ours) {
      // Against raw amqplib acking the way the library does, so the ratio is about the library's code, not its acks.
      const measured = `${spreadText(ours.throughputVsCoalesced, x)}; vs raw acking each message ${spreadText(ours.throughputVsRaw, x)}`;
      rows.push(
        `| happy path at least ${TARGETS.rawRatio}x the throughput of raw amqplib (acks coalesced as ours) | ${measured} | ${verdict(ours.throughputVsCoalesced.median >= TARGETS.rawRatio)} |`,
        `| happy path at most ${TARGETS.rawCpuRatio}x the CPU per message of that baseline | ${spreadText(ours.cpuVsCoalesced, x)} | ${verdict(ours.cpuVsCoalesced.median <= TARGETS.rawCpuRatio)} |`,
      );
    }
    const transport = happy.rows.find((row) => row.id === 'ours-transport');
    if (transport) {
      const vsDecorator = 1 / transport.oursVsThis.median;
      rows.push(
        `| transport at least ${TARGETS.transportVsDecorator}x the decorator path's throughput | ${x(vsDecorator)} (CPU per message ${x(transport.cpuUsPerMessage.median / (ours?.cpuUsPerMessage.median ?? NaN))}, ratio of medians) | ${verdict(vsDecorator >= TARGETS.transportVsDecorator)} |`,
      );
    }
    if (happy.transportVsNest) {
      rows.push(
        `| transport at least ${TARGETS.transportVsNest}x Nest's ServerRMQ throughput | ${spreadText(happy.transportVsNest.throughput, x)} (CPU ${spreadText(happy.transportVsNest.cpu, x)}) | ${verdict(happy.transportVsNest.throughput.median >= TARGETS.transportVsNest)} |`,
      );
    }
    for (const other of happy.rows.filter((row) => row.id === 'golevelup' || row.id === 'nest-rmq')) {
      rows.push(
        `| happy path ahead of ${other.label} | ours / theirs ${spreadText(other.oursVsThis, x)} | ${verdict(other.oursVsThis.median > 1)} |`,
      );
    }
  }
  const ours = r['retry-path']?.rows.find((row) => row.id === 'ours');
  if (ours)
    rows.push(
      `| retry lateness p99 under ${TARGETS.latenessP99Ms} ms | ${spreadText(ours.lateness.p99, ms)} ms | ${verdict(ours.lateness.p99.median < TARGETS.latenessP99Ms)} |`,
    );
  const rawDlx = r['retry-path']?.rows.find((row) => row.id === 'raw-dlx');
  if (ours && rawDlx) {
    const throughput = ours.throughput.median / rawDlx.throughput.median;
    const cpu = ours.cpuUsPerMessage.median / rawDlx.cpuUsPerMessage.median;
    const over = ours.lateness.p99.median - rawDlx.lateness.p99.median;
    rows.push(
      `| retry path at least ${TARGETS.retryRatio}x a raw DLX+TTL loop's throughput, at most ${TARGETS.retryCpuRatio}x its CPU (ratios of medians) | ${x(throughput)}, CPU ${x(cpu)} | ${verdict(throughput >= TARGETS.retryRatio && cpu <= TARGETS.retryCpuRatio)} |`,
      `| retry lateness p99 within ${TARGETS.retryLatenessOverRawMs} ms of the raw loop's | ${ms(ours.lateness.p99.median)} vs ${ms(rawDlx.lateness.p99.median)} ms | ${verdict(over <= TARGETS.retryLatenessOverRawMs)} |`,
    );
  }
  if (r.outbox)
    rows.push(
      `| outbox commit to delivery p99 under ${TARGETS.latenessP99Ms} ms at ${int(r.outbox.perSecond)}/s | ${spreadText(r.outbox.latency.p99, ms)} ms | ${verdict(r.outbox.latency.p99.median < TARGETS.latenessP99Ms)} |`,
    );
  const delays = r.delays;
  if (delays?.available) {
    rows.push(`| delayed messages never early | ${spreadText(delays.early)} early | ${verdict(delays.early.max === 0)} |`);
    rows.push(
      `| delay lateness p99 at most ${TARGETS.delayLatenessP99Ms} ms (classic ladder) | ${spreadText(delays.lateness.p99, ms)} ms | ${verdict(delays.lateness.p99.median <= TARGETS.delayLatenessP99Ms)} |`,
    );
    if (delays.quorum) {
      const q = delays.quorum;
      rows.push(`| quorum ladder: delayed messages never early | ${spreadText(q.early)} early | ${verdict(q.early.max === 0)} |`);
      rows.push(
        `| quorum ladder: delay lateness p99 at most ${TARGETS.quorumLatenessP99Ms} ms | ${spreadText(q.lateness.p99, ms)} ms | ${verdict(q.lateness.p99.median <= TARGETS.quorumLatenessP99Ms)} |`,
      );
    }
  }
  const memory = r.memory?.rows.filter((row) => row.id === 'ours');
  if (memory && memory.length > 1) {
    const [smallest, largest] = [memory[0], memory[memory.length - 1]];
    const growth = largest.rssPeakMb.median / smallest.rssPeakMb.median;
    rows.push(
      `| memory flat in backlog size (peak RSS within ${Math.round((TARGETS.memoryGrowth - 1) * 100)}%) | ${int(largest.backlog)} vs ${int(smallest.backlog)}: ${x(growth)} | ${verdict(growth <= TARGETS.memoryGrowth)} |`,
    );
  }
  const publishing = r.publish?.rows.find((row) => row.id === 'ours');
  const rawPublishing = r.publish?.rows.find((row) => row.id === 'raw');
  const sameProperties = r.publish?.rows.find((row) => row.id === 'raw-props');
  if (publishing && rawPublishing) {
    const vsSame = sameProperties
      ? `; vs raw sending the same message id and mandatory flag ${x(publishing.throughput.median / sameProperties.throughput.median)}, CPU ${x(publishing.cpuUsPerMessage.median / sameProperties.cpuUsPerMessage.median)} (ratios of medians)`
      : '';
    rows.push(
      `| RetryPublisher.publish at least ${TARGETS.publishRatio}x amqplib's confirm channel, at most ${TARGETS.publishCpuRatio}x its CPU | ${spreadText(publishing.throughputVsRaw, x)}, CPU ${spreadText(publishing.cpuVsRaw, x)}${vsSame} | ${verdict(publishing.throughputVsRaw.median >= TARGETS.publishRatio && publishing.cpuVsRaw.median <= TARGETS.publishCpuRatio)} |`,
    );
    const flood = publishing.floodRssPeakMb.median / rawPublishing.floodRssPeakMb.median;
    rows.push(
      `| a flood of publishes: peak RSS at most ${TARGETS.floodRssRatio}x raw's | ${fixed(publishing.floodRssPeakMb.median, 0)} vs ${fixed(rawPublishing.floodRssPeakMb.median, 0)} MB: ${x(flood)} | ${verdict(flood <= TARGETS.floodRssRatio)} |`,
    );
  }
  return rows;
}

function happyPath(h: HappyPathResult): string[] {
  return [
    `## 1. Happy path: a pre-filled queue of ${int(h.messages)} messages, one handler call and one ack each`,
    '',
    "Throughput runs from the first delivery to the last handled message; CPU is the consuming process's user + system time over the same window, per message (the steadier figure on a machine whose cores the broker shares).",
    '',
    'Two raw amqplib baselines: one acks as this library does (one `multiple` ack per event-loop turn for the messages handled in it), the comparison that the ratios lead with; the other sends an ack per message, as most consumers do.',
    '',
    '| contender | msg/s | vs raw, acks coalesced | vs raw, ack per message | CPU µs/msg | CPU vs raw, coalesced | CPU vs raw, per message | peak RSS MB |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...h.rows.map(
      (row) =>
        `| ${row.label} (${row.package}) | ${spreadText(row.throughput)} | ${spreadText(row.throughputVsCoalesced, x)} | ${spreadText(row.throughputVsRaw, x)} | ${spreadText(row.cpuUsPerMessage, fixed)} | ${spreadText(row.cpuVsCoalesced, x)} | ${spreadText(row.cpuVsRaw, x)} | ${spreadText(row.rssPeakMb, (n) => fixed(n, 0))} |`,
    ),
    ...(h.transportVsNest
      ? [
          '',
          `The transport (RetryServer, an @EventPattern handler with one retry tier) against Nest's RMQ transport (ServerRMQ, manual acks), same envelope, prefetch and work: throughput ${spreadText(h.transportVsNest.throughput, x)}, CPU per message ${spreadText(h.transportVsNest.cpu, x)}.`,
        ]
      : []),
  ];
}

function retryPath(r: RetryPathResult): string[] {
  return [
    `## 2. Retry path: ${int(r.messages)} messages that each fail once, retried through one ${r.tierDelayMs} ms tier`,
    '',
    `Throughput and CPU: a pre-filled backlog, messages completed (second attempt acked) per second. Lateness: the same number published at a steady ${int(r.pacedPerSecond)} msg/s, so that no retry waits behind a backlog; lateness = (attempt 2 - attempt 1) - ${r.tierDelayMs} ms, percentiles per round.`,
    '',
    '| contender | msg/s (backlog) | CPU µs/msg | lateness p50 ms | p95 ms | p99 ms | max ms |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...r.rows.map(
      (row) =>
        `| ${row.label} | ${spreadText(row.throughput)} | ${spreadText(row.cpuUsPerMessage, fixed)} | ${spreadText(row.lateness.p50, ms)} | ${spreadText(row.lateness.p95, ms)} | ${spreadText(row.lateness.p99, ms)} | ${spreadText(row.lateness.max, ms)} |`,
    ),
  ];
}

const ladderRow = (name: string, l: LadderResult) =>
  `| ${name} | ${spreadText(l.lateness.p50, ms)} | ${spreadText(l.lateness.p95, ms)} | ${spreadText(l.lateness.p99, ms)} | ${spreadText(l.lateness.max, ms)} | ${spreadText(l.early)} | ${l.behindLongMs ? spreadText(l.behindLongMs, ms) : `held back (not delivered ${HELD_BACK_AFTER_MS / 1000} s after it was due)`} |`;

function delays(d: DelaysResult): string[] {
  if (!d.available) return ['## 3. Delays', '', `Not yet available: RetryPublisher.publish rejects a delay ("${d.reason}").`];
  return [
    `## 3. Delays: ${int(d.messages)} messages delayed 100 ms to ${int(d.maxDelayMs)} ms, published at 1,000 a second`,
    '',
    `| ladder | lateness p50 ms | p95 ms | p99 ms | max ms | early | 100 ms behind ${int(d.blockers)} one-hour, late by ms |`,
    '|---|---:|---:|---:|---:|---:|---:|',
    ladderRow('classic (default)', d),
    ...(d.quorum ? [ladderRow('quorum', d.quorum)] : []),
  ];
}

function variants(v: VariantsResult): string[] {
  return [
    `## 7. Variants: the happy path (${int(v.messages)} messages) with options added, against the same contender with its defaults`,
    '',
    "A feature ON, as a user turns it on (bench/scenarios/variants.ts); ratios within a round. A feature that is off by default costs nothing when the happy path's ratio to raw amqplib (scenario 1) stays where it was.",
    '',
    '| variant | msg/s | µs CPU/msg | vs default: msg/s | vs default: CPU/msg |',
    '|---|---:|---:|---:|---:|',
    ...v.rows.map(
      (row) =>
        `| ${row.label} (vs ${row.baseline}) | ${spreadText(row.throughput, int)} | ${spreadText(row.cpuUsPerMessage, (n) => fixed(n))} | ${spreadText(row.throughputVsDefault, x)} | ${spreadText(row.cpuVsDefault, x)} |`,
    ),
  ];
}

function memory(m: MemoryResult): string[] {
  return [
    '## 4. Memory: RSS of the consuming process through a backlog',
    '',
    'RSS at the first delivery (the application started) and the highest RSS sampled every 20 ms until the backlog was consumed.',
    '',
    '| contender | backlog | RSS at start MB | peak RSS MB |',
    '|---|---:|---:|---:|',
    ...m.rows.map(
      (row) =>
        `| ${row.label} | ${int(row.backlog)} | ${spreadText(row.rssStartMb, (n) => fixed(n, 0))} | ${spreadText(row.rssPeakMb, (n) => fixed(n, 0))} |`,
    ),
  ];
}

function publish(p: PublishResult): string[] {
  const mbText = (n: number) => fixed(n, 0);
  const flooded = p.rows.filter((row) => row.floodFirstError);
  return [
    `## 5. Publishing: ${int(p.messages)} confirmed publishes, then a flood of ${int(p.floodMessages)}`,
    '',
    `Throughput: \`RetryPublisher.publish\` (a Nest application context with \`RetryModule.forRoot({ url, delayedDelivery: false })\`) against raw amqplib's confirm channel with a callback per message, both persistent JSON to a durable queue behind a direct exchange, at most ${int(p.concurrency)} publishes awaiting their confirm (a new one starts when one settles). The window runs from the first publish call to the last confirm, after one unmeasured publish (the library opens its publishing connection on first use) and ${int(p.warmUp)} more (at most 1,000 in flight: the JIT's start is not measured); CPU is the publishing process's user + system time over it, per message; ratios are to plain raw within a round. The third row is raw amqplib sending the two properties the library adds to every publish (a random UUID as message id, \`mandatory\`): the same work on the wire.`,
    '',
    '| contender | msg/s | vs raw | CPU µs/msg | CPU vs raw |',
    '|---|---:|---:|---:|---:|',
    ...p.rows.map(
      (row) =>
        `| ${row.label} (${row.package}) | ${spreadText(row.throughput)} | ${spreadText(row.throughputVsRaw, x)} | ${spreadText(row.cpuUsPerMessage, fixed)} | ${spreadText(row.cpuVsRaw, x)} |`,
    ),
    '',
    `Flood: ${int(p.floodMessages)} publishes called at once, none awaited until all were called (a careless caller). RSS of the publishing process just before the first call, the highest RSS sampled every 20 ms until every publish settled, and the time until then.`,
    '',
    '| contender | RSS before MB | peak RSS MB | peak - before MB | all settled after s | failed |',
    '|---|---:|---:|---:|---:|---:|',
    ...p.rows.map(
      (row) =>
        `| ${row.label} | ${spreadText(row.floodRssBeforeMb, mbText)} | ${spreadText(row.floodRssPeakMb, mbText)} | ${spreadText(row.floodRssGrowthMb, mbText)} | ${spreadText(row.floodSeconds, (n) => fixed(n, 2))} | ${spreadText(row.floodFailed)} |`,
    ),
    ...(flooded.length ? ['', ...flooded.map((row) => `${row.label}, first failure of the flood: ${row.floodFirstError}`)] : []),
  ];
}

function outbox(o: OutboxResult): string[] {
  return [
    `## 6. The transactional outbox: ${int(o.messages)} transactions at ${int(o.perSecond)} a second, then a drain of ${int(o.drainRows)} rows`,
    '',
    "Commit to delivery: each transaction writes one outbox row (`OutboxPublisher.publish` on a pg client in BEGIN ... COMMIT); the time runs from the COMMIT call to the message's arrival at a consumer in the same process (NOTIFY wakes the relay, which claims the row with FOR UPDATE SKIP LOCKED, publishes with confirms and marks it). Drain: rows committed while no relay ran, then one relay (batches of 100), against `RetryPublisher.publish` of as many messages with at most 100 awaiting their confirm; both timed to the last arrival.",
    '',
    '| commit to delivery p50 | p95 | p99 | max | relay drain msg/s | RetryPublisher.publish msg/s | relay / plain |',
    '|---|---|---|---|---|---|---|',
    `| ${spreadText(o.latency.p50, ms)} ms | ${spreadText(o.latency.p95, ms)} ms | ${spreadText(o.latency.p99, ms)} ms | ${spreadText(o.latency.max, ms)} ms | ${spreadText(o.relayPerSecond, int)} | ${spreadText(o.plainPerSecond, int)} | ${spreadText(o.relayVsPlain, x)} |`,
  ];
}

function outage(o: OutageResult): string[] {
  return [
    `## 7. Outage: ${int(o.messages)} messages at ${int(o.ratePerSecond)}/s, a dependency failing every call for ${o.outageMs / 1000} s from ${o.outageStartMs / 1000} s`,
    '',
    `Delays ${o.delays.join(', ')}, ${o.maxAttempts} attempts; both queues at once, one run. The breaker: \`${o.breaker}\`. docs/outage-protection.md states the bounds: with the breaker 0 parked, 0 lost, handler calls during the outage under 3% of the messages, every message handled within 30 s of the recovery.`,
    '',
    '| queue | good messages parked | lost | handler calls during the outage | share of the messages | last handled after the recovery s |',
    '|---|---:|---:|---:|---:|---:|',
    ...o.rows.map(
      (row) =>
        `| ${row.breaker ? 'with circuit breaker' : 'without'} | ${int(row.parked)} | ${int(row.lost)} | ${int(row.callsDuringOutage)} | ${fixed((100 * row.callsDuringOutage) / row.messages, 1)}% | ${fixed(row.lastHandledAfterRecoveryMs / 1000, 1)} |`,
    ),
  ];
}

/** The whole report, as printed at the end and written to RESULTS.md. */
export function renderMarkdown(env: Environment, results: ScenarioResults, failures: string[], durationMs: number, chartFile: string): string {
  const sections = [
    ['# Benchmark results'],
    [
      `${env.date} · ${env.broker} · Node ${env.node} · ${env.cores} cores (${env.cpu}), shared with the broker · ${settings.quick ? 'BENCH_QUICK smoke run, ' : ''}${settings.rounds} round(s), ${Math.round(durationMs / 1000)} s`,
      '',
      'Every contender consumes with prefetch 100, Nagle off (noDelay), from fresh durable queues of persistent messages with small JSON bodies; each run is a new Node process. Contenders are interleaved, their order rotated from round to round (A B C D, B C D A, ...); a figure is the median over rounds with the range in parentheses, and ratios are taken within a round before that. `npm run bench` regenerates this file (bench/README.md).',
      '',
      `![benchmark chart](${chartFile})`,
    ],
    failures.length ? ['## Failed scenarios', '', ...failures.map((f) => `- ${f}`)] : [],
    [
      '## Targets',
      '',
      ...targets(results),
      '',
      'A missed target is not left there: [docs/performance.md](../docs/performance.md) ("Where the CPU goes, path by path") gives, for each, the profiles and A/B runs that show what the remaining cost is, why it stays and the best figure measured.',
    ],
    results['happy-path'] ? happyPath(results['happy-path']) : [],
    results['retry-path'] ? retryPath(results['retry-path']) : [],
    results.delays ? delays(results.delays) : [],
    results.memory ? memory(results.memory) : [],
    results.publish ? publish(results.publish) : [],
    results.outbox ? outbox(results.outbox) : [],
    results.variants ? variants(results.variants) : [],
    results.outage ? outage(results.outage) : [],
  ];
  return `${sections
    .filter((s) => s.length)
    .map((s) => s.join('\n'))
    .join('\n\n')}\n`;
}
