import { formatDuration } from '../time/duration.reader.js';

/** A retry policy as the start line tells it. */
export interface PolicyLine {
  maxAttempts: number;
  delaysMs: readonly number[];
}

/** A microservices pattern whose policy differs from its queue's. */
export interface PatternPolicyLine extends PolicyLine {
  pattern: string;
}

/** "3 attempts, retries after 300ms, 1s"; "1 attempt, no retries". */
export function describePolicy({ maxAttempts, delaysMs }: PolicyLine): string {
  if (maxAttempts <= 1) return '1 attempt, no retries';
  return `${maxAttempts} attempts, retries after ${delaysMs.map(formatDuration).join(', ')}`;
}

/**
 * The line a handler queue logs once it is consumed: the queue's policy, then each pattern's that runs its own.
 * @example consumingLine({ queue: 'shipping', errorQueue: 'shipping.error', maxAttempts: 2, delaysMs: [1000] }, [{ pattern: 'ship', maxAttempts: 3, delaysMs: [300] }])
 * // 'Consuming "shipping": 2 attempts, retries after 1s, parking in "shipping.error"; pattern "ship": 3 attempts, retries after 300ms'
 */
export function consumingLine(queue: PolicyLine & { queue: string; errorQueue: string }, patterns: readonly PatternPolicyLine[] = []): string {
  const own = patterns.map((p) => `; pattern ${JSON.stringify(p.pattern)}: ${describePolicy(p)}`).join('');
  return `Consuming "${queue.queue}": ${describePolicy(queue)}, parking in "${queue.errorQueue}"${own}`;
}
