import type { ConsumeMessage } from 'amqplib';
import { ActivityCounter } from './activity.counter.js';

const delivery = (queue: string) => ({ queue, attempt: 1, maxAttempts: 3, message: {} as ConsumeMessage, deaths: [], durationMs: 1 });

describe('ActivityCounter', () => {
  it('counts handled, retried and parked messages per queue; a failure that parks is counted once, as parked', () => {
    const counter = new ActivityCounter();
    counter.handled(delivery('orders'));
    counter.handled(delivery('orders'));
    counter.failed({ ...delivery('orders'), error: new Error('x'), retryTier: 1, retryDelayMs: 1000 });
    counter.failed({ ...delivery('orders'), error: new Error('x') }); // parked: the parked event counts it
    counter.parked({
      queue: 'orders',
      errorQueue: 'orders.error',
      reason: 'exhausted',
      error: new Error('x'),
      handlerCalls: 3,
      message: {} as ConsumeMessage,
    });
    counter.handled(delivery('billing'));
    expect(counter.countsOf('orders')).toEqual({ handled: 2, retried: 1, parked: 1 });
    expect(counter.countsOf('billing')).toEqual({ handled: 1, retried: 0, parked: 0 });
    expect(counter.countsOf('never-seen')).toEqual({ handled: 0, retried: 0, parked: 0 });
  });

  it('hands out copies: a caller cannot change the counts', () => {
    const counter = new ActivityCounter();
    counter.handled(delivery('orders'));
    counter.countsOf('orders').handled = 99;
    expect(counter.countsOf('orders').handled).toBe(1);
  });
});
