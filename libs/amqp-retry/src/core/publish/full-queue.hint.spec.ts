import { readQueueLimits } from '../config/queue-limits.config.js';
import { fullQueueHint, refusesWhenFull } from './full-queue.hint.js';

const limits = (options: Parameters<typeof readQueueLimits>[0], queueType: 'classic' | 'quorum' = 'classic') =>
  readQueueLimits(options, queueType, (key) => key);

describe('fullQueueHint', () => {
  const orders = { queue: 'orders', exchange: 'shop', queueType: 'classic' as const, limits: limits({ maxLength: 2, overflow: 'reject-publish' }) };
  const billing = { queue: 'billing', queueType: 'classic' as const, limits: limits({ maxLength: 2 }) };

  it('names the full queue, its limit and the fix, by name or by its exchange', () => {
    expect(fullQueueHint('', 'orders', [orders, billing])).toBe(
      `the broker refused it: the queue "orders" (maxLength 2, overflow 'reject-publish') is full and refuses new messages until its consumer catches up. Publish again later, raise the limit, or use overflow 'drop-head' or 'reject-publish-dlx' to park what does not fit`,
    );
    expect(fullQueueHint('shop', 'order.created', [orders])).toContain('"orders"');
  });

  it('says nothing of queues that drop or park what does not fit, or that the publish cannot reach', () => {
    expect(fullQueueHint('', 'billing', [orders, billing])).toBeUndefined();
    expect(fullQueueHint('other', 'orders', [orders])).toBeUndefined();
  });

  it('counts a quorum queue with a limit as refusing', () => {
    expect(refusesWhenFull({ queue: 'q', queueType: 'quorum', limits: limits({ maxLengthBytes: 10 }, 'quorum') })).toBe(true);
    expect(refusesWhenFull({ queue: 'q', queueType: 'quorum', limits: limits({}, 'quorum') })).toBe(false);
  });
});
