import type { ConsumeMessage } from 'amqplib';
import { ActivityCounter } from './activity.counter.js';

describe('ActivityCounter', () => {
  it('counts handled, retried and parked messages per queue; a failure that parks is counted once, as parked', () => {
    const counter = new ActivityCounter();
    counter.countHandled('orders');
    counter.countHandled('orders');
    counter.countFailed('orders', 1, new Error('x'), true);
    counter.countFailed('orders', 1, new Error('x'), false); // parked: the parked event counts it
    counter.parked({
      queue: 'orders',
      errorQueue: 'orders.error',
      reason: 'exhausted',
      error: new Error('x'),
      handlerCalls: 3,
      message: {} as ConsumeMessage,
    });
    counter.countHandled('billing');
    expect(counter.countsOf('orders')).toEqual({ handled: 2, retried: 1, parked: 1 });
    expect(counter.countsOf('billing')).toEqual({ handled: 1, retried: 0, parked: 0 });
    expect(counter.countsOf('never-seen')).toEqual({ handled: 0, retried: 0, parked: 0 });
  });

  it('hands out copies: a caller cannot change the counts', () => {
    const counter = new ActivityCounter();
    counter.countHandled('orders');
    counter.countsOf('orders').handled = 99;
    expect(counter.countsOf('orders').handled).toBe(1);
  });
});
