// The names this library declares for a bench handler, taken from the library itself rather than spelled out here:
// its tier queues carry a digest of the schedule (`Q.retry.<k>.<delay>.<6 hex>`), and a copy of that naming in the
// bench went stale once already. Both come from the built package (scripts/bench.sh builds it first), which is what
// the ours contender runs: the names from its public `retryTopologyNames`; the plan record's reader is not exported,
// hence its path.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { retryTopologyNames } from 'nestjs-amqp-retry';
import type { Names } from '../runner/bench-broker.js';
import { settings } from '../settings.js';

type PlanRecordModule = typeof import('../../libs/amqp-retry/dist/esm/core/topology/retry-plan.record.js');

const libraryCore = join(import.meta.dirname, '..', '..', '..', 'libs', 'amqp-retry', 'dist', 'esm', 'core', 'topology'); // from bench/dist/contenders
const { readPlanRecord } = (await import(pathToFileURL(join(libraryCore, 'retry-plan.record.js')).href)) as PlanRecordModule;

export { readPlanRecord };

/**
 * Every queue and exchange of a handler on `queue` with the one tier that ours.contender.ts configures (the
 * retry-path tier delay, which the runner passes to every contender). The plan queue holds the library's record
 * of its tiers, not messages of the run: it is deleted but never expected empty, and the runner checks the tiers it
 * lists against these (bench-session.ts), so a change of naming fails loudly instead of leaving queues behind.
 */
export function ourTopology(queue: string, delaysMs: number[] = [settings.retryPath.tierDelayMs]): Names {
  const names = retryTopologyNames(queue, { delays: delaysMs });
  return {
    queues: [queue, ...names.tiers, names.errorQueue],
    exchanges: [names.deadLetterExchange, names.firstFailureExchange, names.returnExchange],
    planQueue: names.planQueue,
  };
}

/**
 * `names` and the tier queues of a variant's pattern policy: the transport declares a schedule of its own for a pattern
 * with a `retry` policy (bench/scenarios/variants.ts), whose tiers the queue's plan record does not list.
 */
export function withPatternTiers(names: Names, queue: string, pattern?: Record<string, unknown>): Names {
  const delays = pattern?.delays as Array<number | string> | undefined;
  if (!delays) return names;
  const { tiers } = retryTopologyNames(queue, { delays });
  return { ...names, queues: [...new Set([...names.queues, ...tiers])] };
}
