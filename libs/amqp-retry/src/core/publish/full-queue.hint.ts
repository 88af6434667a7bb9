import type { HandlerConfig } from '../config/handler.config.js';
import type { QueueLimitsConfig } from '../config/queue-limits.config.js';

type LimitedQueue = Pick<HandlerConfig, 'queue' | 'exchange' | 'queueType' | 'limits'>;

/** Whether a full queue refuses publishes: overflow 'reject-publish' (a quorum queue with a limit always does). */
export function refusesWhenFull({ limits, queueType }: LimitedQueue): boolean {
  if (!limits || (limits.maxLength === undefined && limits.maxLengthBytes === undefined)) return false;
  return limits.overflow === 'reject-publish' || queueType === 'quorum';
}

const limitText = ({ maxLength, maxLengthBytes }: QueueLimitsConfig) =>
  [maxLength !== undefined ? `maxLength ${maxLength}` : '', maxLengthBytes !== undefined ? `maxLengthBytes ${maxLengthBytes}` : '']
    .filter(Boolean)
    .join(', ');

/**
 * Why the broker nacked a publish to `exchange` with `routingKey`, when a handler queue it reaches refuses publishes
 * once full: the queues, their limits and what to do; else undefined.
 * @example fullQueueHint('', 'orders', [{ queue: 'orders', queueType: 'classic', limits }]) // 'the queue "orders" is full (maxLength 2, ...'
 */
export function fullQueueHint(exchange: string, routingKey: string, queues: readonly LimitedQueue[]): string | undefined {
  const full = queues.filter((q) => refusesWhenFull(q) && (exchange === '' ? routingKey === q.queue : exchange === q.exchange));
  if (full.length === 0) return undefined;
  const named = full.map((q) => `"${q.queue}" (${limitText(q.limits as QueueLimitsConfig)}, overflow 'reject-publish')`).join(', ');
  return (
    `the broker refused it: the queue ${named} is full and refuses new messages until its consumer catches up. ` +
    `Publish again later, raise the limit, or use overflow 'drop-head' or 'reject-publish-dlx' to park what does not fit`
  );
}
