// A/B of two contenders on the happy path, for work on the library's cost per message: alternating runs (A B, B A,
// A B, ...) of BENCH_COMPARE_MESSAGES (50,000, as the bench) messages, BENCH_COMPARE_PAIRS (6) pairs, and the median of the
// within-pair ratios. Quicker and steadier than a whole bench for one question ("did this change help?").
//   node bench/dist/profile/compare.js ours raw-coalesced
//   node bench/dist/profile/compare.js ours:console-heartbeat ours   (a row of scenarios/variants.ts against its default)
import { CONTENDERS, type ContenderId } from '../contenders/registry.js';
import { VARIANTS } from '../scenarios/variants.js';
import { consumeBacklog } from '../runner/runs.js';
import { BenchSession } from '../runner/bench-session.js';
import { cpuPerMessageOf, throughputOf } from '../runner/stats.js';

const [a, b] = process.argv.slice(2);
/** `ours` or `ours:<variant id>`: the contender, and the variant's options when one is named. */
const side = (arg: string) => {
  const [id, variantId] = arg.split(':') as [ContenderId, string | undefined];
  const variant = variantId === undefined ? undefined : VARIANTS.find((v) => v.id === variantId && v.contender === id);
  if (!(id in CONTENDERS) || (variantId !== undefined && !variant))
    throw new Error(
      `usage: compare.js <contender[:variant]> <contender[:variant]>; contenders: ${Object.keys(CONTENDERS).join(', ')}; variants: ${VARIANTS.map((v) => `${v.contender}:${v.id}`).join(', ')}`,
    );
  return { id, options: variant?.options };
};
const sides = { [a]: side(a), [b]: side(b) };
const messages = Number(process.env.BENCH_COMPARE_MESSAGES ?? 50_000);
const pairs = Number(process.env.BENCH_COMPARE_PAIRS ?? 6);
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];

const session = await BenchSession.open();
try {
  await consumeBacklog(session, 'warm-up', sides[b].id, 5_000);
  const cpu: number[] = [];
  const rate: number[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    const order = pair % 2 === 0 ? [a, b] : [b, a];
    const results = new Map<string, Awaited<ReturnType<typeof consumeBacklog>>>();
    for (const arg of order) results.set(arg, await consumeBacklog(session, 'compare', sides[arg].id, messages, sides[arg].options));
    const [ra, rb] = [results.get(a)!, results.get(b)!];
    cpu.push(cpuPerMessageOf(ra) / cpuPerMessageOf(rb));
    rate.push(throughputOf(ra) / throughputOf(rb));
    console.log(
      `pair ${pair + 1}: ${a} ${cpuPerMessageOf(ra).toFixed(1)} µs ${Math.round(throughputOf(ra))}/s, ${b} ${cpuPerMessageOf(rb).toFixed(1)} µs ${Math.round(throughputOf(rb))}/s`,
    );
  }
  console.log(
    `${a} / ${b}: CPU per message ${median(cpu).toFixed(2)}x (${Math.min(...cpu).toFixed(2)}-${Math.max(...cpu).toFixed(2)}), throughput ${median(rate).toFixed(2)}x (${Math.min(...rate).toFixed(2)}-${Math.max(...rate).toFixed(2)})`,
  );
} finally {
  await session.close();
}
