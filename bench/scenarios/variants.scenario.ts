// Scenario 7, variants: each row of VARIANTS (variants.ts) on the happy path against the same contender with its
// defaults, in the same round, alternating which goes first: msg/s and CPU time per message, and their ratios.
// Run alone: node bench/dist/scenarios/variants.scenario.js
import { CONTENDERS } from '../contenders/registry.js';
import { fixed, int } from '../report/format.js';
import { progress, runScenario, warmUp } from '../runner/scenario-process.js';
import { consumeBacklog } from '../runner/runs.js';
import { cpuPerMessageOf, spread, throughputOf } from '../runner/stats.js';
import { settings } from '../settings.js';
import type { WindowResult } from '../worker/protocol.js';
import type { VariantsResult } from './results.js';
import { VARIANTS } from './variants.js';

runScenario('variants', async (session): Promise<VariantsResult> => {
  const { messages } = settings.happyPath;
  await warmUp(session);
  const rows: VariantsResult['rows'] = [];
  // BENCH_VARIANTS=handler-timeout,rate-limit: only these rows (a quick look at one feature).
  const only = process.env.BENCH_VARIANTS?.split(',').map((id) => id.trim());
  for (const variant of VARIANTS.filter((v) => !only || only.includes(v.id))) {
    const rounds: Array<{ base: WindowResult; variant: WindowResult }> = [];
    for (let round = 1; round <= settings.rounds; round++) {
      const runBase = () => consumeBacklog(session, 'variant', variant.contender, messages);
      const runVariant = () => consumeBacklog(session, 'variant', variant.contender, messages, variant.options);
      const [first, second] = round % 2 === 1 ? [runBase, runVariant] : [runVariant, runBase];
      const a = await first();
      const b = await second();
      const r = round % 2 === 1 ? { base: a, variant: b } : { base: b, variant: a };
      progress(
        'variants',
        round,
        `${variant.id.padEnd(28)} ${int(throughputOf(r.variant)).padStart(7)} msg/s ${fixed(cpuPerMessageOf(r.variant)).padStart(5)} µs CPU/msg; default ${int(throughputOf(r.base)).padStart(7)} msg/s ${fixed(cpuPerMessageOf(r.base)).padStart(5)} µs`,
      );
      rounds.push(r);
    }
    rows.push({
      id: variant.id,
      label: variant.label,
      baseline: CONTENDERS[variant.contender].label,
      throughput: spread(rounds.map((r) => throughputOf(r.variant))),
      cpuUsPerMessage: spread(rounds.map((r) => cpuPerMessageOf(r.variant))),
      throughputVsDefault: spread(rounds.map((r) => throughputOf(r.variant) / throughputOf(r.base))),
      cpuVsDefault: spread(rounds.map((r) => cpuPerMessageOf(r.variant) / cpuPerMessageOf(r.base))),
    });
  }
  return { messages, rounds: settings.rounds, rows };
});
