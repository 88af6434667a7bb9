// npm run bench (through scripts/bench.sh, which builds first): runs each scenario in a process of its own, one after
// the other, then prints the report and writes it to bench/RESULTS.md and bench/results.svg. A quick, partial or
// profiled run writes to bench/dist/ instead: the committed results are always those of a whole plain run.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { renderChart } from './report/results-chart.js';
import { renderMarkdown, type Environment } from './report/results-markdown.js';
import { BenchBroker } from './runner/bench-broker.js';
import type { ScenarioResults } from './scenarios/results.js';
import { settings, type ScenarioName } from './settings.js';

const BENCH_DIR = join(import.meta.dirname, '..');
const isPlainRun = !settings.quick && !process.env.BENCH_ONLY && !process.env.BENCH_ROUNDS && !settings.cpuProfileOf;
const OUTPUT_DIR = isPlainRun ? BENCH_DIR : join(BENCH_DIR, 'dist');

let current: ChildProcess | undefined;
let interrupted = false;

/** Runs bench/dist/scenarios/<name>.scenario.js in its own process and returns what it sends back. */
function runScenarioProcess(name: ScenarioName): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = fork(join(import.meta.dirname, 'scenarios', `${name}.scenario.js`), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    current = child;
    let result: unknown;
    const killer = setTimeout(() => child.kill('SIGTERM'), settings.scenarioDeadlineMs);
    child.on('message', (message) => (result = message));
    child.on('exit', (code, signal) => {
      clearTimeout(killer);
      current = undefined;
      if (code === 0 && result !== undefined) resolve(result);
      else reject(new Error(`exited with ${signal ?? `code ${code}`}${result === undefined ? ' and no result' : ''}`));
    });
  });
}

async function environment(): Promise<Environment> {
  const broker = await BenchBroker.connect(settings.url);
  try {
    return {
      date: new Date().toISOString().replace(/:\d\d\.\d+Z$/, ' UTC').replace('T', ' '),
      broker: broker.serverVersion,
      node: process.version,
      cores: os.availableParallelism(),
      cpu: os.cpus()[0]?.model.trim() ?? 'unknown CPU',
    };
  } finally {
    await broker.close();
  }
}

// A terminal's Ctrl-C reaches the scenario process too, which cleans up and exits; a SIGTERM is for us alone,
// so it is passed on. Either way we wait for the scenario to finish its cleanup, then stop.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    interrupted = true;
    if (signal === 'SIGTERM') current?.kill('SIGTERM');
    if (!current) process.exit(130);
  });
}

const startedAt = Date.now();
const env = await environment();
console.log(`Bench: ${env.broker}, Node ${env.node}, ${env.cores} cores; ${settings.rounds} round(s)${settings.quick ? ' (BENCH_QUICK)' : ''}; scenarios: ${settings.scenarios.join(', ')}`);
const results: ScenarioResults = {};
const failures: string[] = [];
for (const name of settings.scenarios) {
  if (interrupted) break;
  try {
    Object.assign(results, { [name]: await runScenarioProcess(name) });
  } catch (error) {
    failures.push(`${name}: ${error instanceof Error ? error.message : String(error)} (its output above says why)`);
  }
}
if (interrupted) process.exit(130);

mkdirSync(OUTPUT_DIR, { recursive: true });
const markdown = renderMarkdown(env, results, failures, Date.now() - startedAt, 'results.svg');
writeFileSync(join(OUTPUT_DIR, 'RESULTS.md'), markdown);
writeFileSync(join(OUTPUT_DIR, 'results.svg'), renderChart(results, `${env.date} · ${env.broker} · Node ${env.node} · ${env.cores} cores`));
console.log(`\n${markdown}`);
console.log(`Written: ${join(OUTPUT_DIR, 'RESULTS.md')} and results.svg beside it`);
process.exitCode = failures.length ? 1 : 0;
