// The measured runs that scenarios are made of. Each takes a fresh queue, measures one contender in its own
// process, checks that every message was settled (or, for publishing, arrived) as expected, and deletes what it declared.
import type { VariantOptions } from '../contenders/contender.js';
import { CONTENDERS, type ContenderId } from '../contenders/registry.js';
import { withPatternTiers } from '../contenders/our-topology.js';
import { settings } from '../settings.js';
import type { PublishWindowResult, RetryWindowResult, WindowResult } from '../worker/protocol.js';
import { BenchSession } from './bench-session.js';

const PUBLISH_ROUTING_KEY = 'bench';

/** Has the contender declare its queue (its own way, then stop), and fills it before the measured consumer starts. */
async function prefill(session: BenchSession, id: ContenderId, queue: string, messages: number): Promise<void> {
  await session.measure('declare', id, { queue });
  await session.broker.fill(queue, messages, CONTENDERS[id].encode);
}

/**
 * Fills a fresh queue with `messages` and measures the contender consuming it: each handled once and acked. With a
 * `variant`, the contender runs with those options added (bench/scenarios/variants.ts).
 */
export function consumeBacklog(
  session: BenchSession,
  scenario: string,
  id: ContenderId,
  messages: number,
  variant?: VariantOptions,
): Promise<WindowResult> {
  // A pattern with a retry policy of its own adds tiers of its own: deleted with the rest.
  const base = CONTENDERS[id];
  const contender = { ...base, namesFor: (queue: string) => withPatternTiers(base.namesFor(queue), queue, variant?.pattern) };
  return session.withFreshQueue(scenario, contender, async (queue) => {
    await prefill(session, id, queue, messages);
    const result = await session.measure<WindowResult, 'consume'>('consume', id, { queue, messages, variant });
    await session.expectDrained(contender.namesFor(queue));
    return result;
  });
}

/** Messages that each fail once and succeed on the retry: pre-filled (`backlog`) or published at a steady rate (`paced`). */
export function retryEach(
  session: BenchSession,
  scenario: string,
  id: ContenderId,
  messages: number,
  mode: 'backlog' | 'paced',
): Promise<RetryWindowResult> {
  const contender = CONTENDERS[id];
  return session.withFreshQueue(scenario, contender, async (queue) => {
    const measure = (whenReady?: () => Promise<void>) => session.measure<RetryWindowResult, 'retry'>('retry', id, { queue, messages }, whenReady);
    let result: RetryWindowResult;
    if (mode === 'backlog') {
      await prefill(session, id, queue, messages);
      result = await measure();
    } else {
      result = await measure(() => session.broker.publishPaced(queue, messages, settings.retryPath.pacedPerSecond, contender.encode));
    }
    if (result.anomalies.length > 0) {
      throw new Error(
        `${contender.label}: ${result.anomalies.length} deliveries broke "fail once, then succeed": ${result.anomalies.slice(0, 5).join('; ')}`,
      );
    }
    await session.expectDrained(contender.namesFor(queue));
    return result;
  });
}

/**
 * Measures the contender publishing `messages` to a fresh durable queue behind a direct exchange, with at most
 * `concurrency` unconfirmed publishes, or all at once (null). Every confirmed message must be in the queue after
 * the run, and the probe publish and the `warmUp` ones made before the window besides (publish.job.ts); the queue and
 * exchange are deleted.
 */
export function publishTo(
  session: BenchSession,
  id: ContenderId,
  messages: number,
  concurrency: number | null,
  warmUp = 0,
): Promise<PublishWindowResult> {
  const queue = BenchSession.uniqueName('publish', id);
  const names = { queues: [queue], exchanges: [queue] }; // the exchange takes the queue's unique name
  return session.withNames(names, async () => {
    await session.broker.declareBoundQueue(queue, queue, PUBLISH_ROUTING_KEY);
    const result = await session.measure<PublishWindowResult, 'publish'>('publish', id, {
      queue,
      exchange: queue,
      routingKey: PUBLISH_ROUTING_KEY,
      messages,
      concurrency,
      warmUp,
    });
    const confirmed = messages - result.failed + 1 + warmUp;
    const depth = await session.broker.depth(queue);
    // A publish that timed out may still have arrived, so with failures the queue may hold more than the confirmed.
    if (depth === undefined || depth < confirmed || (result.failed === 0 && depth !== confirmed)) {
      throw new Error(`${CONTENDERS[id].label}: ${queue} holds ${depth ?? 'no queue,'} messages after ${confirmed} confirmed publishes`);
    }
    return result;
  });
}
