// The names this library declares for a bench handler, taken from the library itself rather than spelled out here:
// its tier queues carry a digest of the schedule (`Q.retry.<k>.<delay>.<6 hex>`), and a copy of that naming in the
// bench went stale once already. Loaded from the built package (bench/run.sh builds it first), which is what the
// ours contender runs; the package's exports keep these functions private, hence the path.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Names } from '../runner/bench-broker.js';
import { settings } from '../settings.js';

type TopologyPlanModule = typeof import('../../libs/amqp-retry/dist/esm/core/retry-topology.plan.js');
type PlanRecordModule = typeof import('../../libs/amqp-retry/dist/esm/core/retry-plan.record.js');

const libraryCore = join(import.meta.dirname, '..', '..', '..', 'libs', 'amqp-retry', 'dist', 'esm', 'core'); // from bench/dist/contenders
const load = <M>(file: string) => import(pathToFileURL(join(libraryCore, file)).href) as Promise<M>;
const { retryNames, tierQueues } = await load<TopologyPlanModule>('retry-topology.plan.js');
const { readPlanRecord } = await load<PlanRecordModule>('retry-plan.record.js');

export { readPlanRecord };

/**
 * Every queue and exchange of a handler on `queue` with the one tier that ours.contender.ts configures (the
 * retry-path tier delay, which the runner passes to every contender). The plan queue holds the library's record
 * of its tiers, not messages of the run: it is deleted but never expected empty, and the runner checks the tiers it
 * lists against these (bench-session.ts), so a change of naming fails loudly instead of leaving queues behind.
 */
export function ourTopology(queue: string): Names {
  const names = retryNames(queue);
  return {
    queues: [queue, ...tierQueues({ queue, delaysMs: [settings.retryPath.tierDelayMs] }), `${queue}.error`],
    exchanges: [names.deadLetterExchange, names.firstFailureExchange, names.returnExchange],
    planQueue: names.planQueue,
  };
}
