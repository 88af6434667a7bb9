// The measured runs that scenarios are made of. Each takes a fresh queue, measures one contender in its own
// process, checks that every message was settled as expected, and deletes what it declared.
import { CONTENDERS, type ContenderId } from '../contenders/registry.js';
import { settings } from '../settings.js';
import type { RetryWindowResult, WindowResult } from '../worker/protocol.js';
import type { BenchSession } from './bench-session.js';

/** Has the contender declare its queue (its own way, then stop), and fills it before the measured consumer starts. */
async function prefill(session: BenchSession, id: ContenderId, queue: string, messages: number): Promise<void> {
  await session.measure('declare', id, { queue });
  await session.broker.fill(queue, messages, CONTENDERS[id].encode);
}

/** Fills a fresh queue with `messages` and measures the contender consuming it: each handled once and acked. */
export function consumeBacklog(session: BenchSession, scenario: string, id: ContenderId, messages: number): Promise<WindowResult> {
  const contender = CONTENDERS[id];
  return session.withFreshQueue(scenario, contender, async (queue) => {
    await prefill(session, id, queue, messages);
    const result = await session.measure<WindowResult, 'consume'>('consume', id, { queue, messages });
    await session.expectDrained(contender.namesFor(queue));
    return result;
  });
}

/** Messages that each fail once and succeed on the retry: pre-filled (`backlog`) or published at a steady rate (`paced`). */
export function retryEach(session: BenchSession, scenario: string, id: ContenderId, messages: number, mode: 'backlog' | 'paced'): Promise<RetryWindowResult> {
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
      throw new Error(`${contender.label}: ${result.anomalies.length} deliveries broke "fail once, then succeed": ${result.anomalies.slice(0, 5).join('; ')}`);
    }
    await session.expectDrained(contender.namesFor(queue));
    return result;
  });
}
