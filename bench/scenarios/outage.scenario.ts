// Scenario 6, the outage of docs/outage-protection.md: messages at a steady rate to two handler queues at once, one
// without and one with a circuit breaker, while their dependency fails every call for a while (outage.driver.ts).
// One run, not rounds: the figures are counts (parked, lost, calls during the outage), not timings to compare.
// Run alone: node bench/dist/scenarios/outage.scenario.js
import { ourTopology } from '../contenders/our-topology.js';
import { describeOutage, outageQueues, outageSettings, runOutage } from './outage.driver.js';
import { runScenario } from '../runner/scenario-process.js';
import { settings } from '../settings.js';
import type { OutageResult } from './results.js';

runScenario('outage', async (session): Promise<OutageResult> => {
  const outage = outageSettings({ ...settings.outage, ...process.env }, settings.url);
  const names = outageQueues('bench.outage');
  // Each queue's names, its plan record queue among them (one Names has room for one planQueue, read for its tiers;
  // the tiers are listed here already).
  const topology = (queue: string) => {
    const { queues, exchanges, planQueue } = ourTopology(queue, outage.delaysMs);
    return { queues: planQueue ? [...queues, planQueue] : queues, exchanges };
  };
  const parts = [names.without, names.with].map(topology);
  const both = { queues: parts.flatMap((part) => part.queues), exchanges: parts.flatMap((part) => part.exchanges) };
  const figures = await session.withNames(both, () => runOutage(outage, names, (line) => console.log(`outage      ${line.trim()}`)));
  for (const row of [figures.without, figures.with]) console.log(`outage      ${describeOutage(row)}`);
  const b = outage.breaker;
  return {
    messages: outage.messages,
    ratePerSecond: outage.ratePerSecond,
    outageStartMs: outage.outageStartMs,
    outageMs: outage.outageMs,
    delays: outage.delays,
    maxAttempts: outage.maxAttempts,
    breaker: `failureRate ${b.failureRate}, minimumCalls ${b.minimumCalls}, window ${b.window}, openFor ${b.openFor}, maxOpenFor ${b.maxOpenFor}, halfOpenCalls ${b.halfOpenCalls}`,
    rows: [figures.without, figures.with],
  };
});
