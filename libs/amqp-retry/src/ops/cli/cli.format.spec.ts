import { formatQueues, formatSummary } from './cli.format.js';

describe('the CLI output', () => {
  it("lists handler queues with their depths, and a delay ladder's ready queue as what it is", () => {
    const text = formatQueues([
      {
        queue: 'orders',
        role: 'handler',
        messages: 2,
        tiers: [{ queue: 'orders.retry.1.1s.ab', messages: 1 }],
        errorQueue: 'orders.error',
        parked: 3,
      },
      { queue: 'amqp-retry.delay.ready', role: 'delay-ladder', messages: 0, tiers: [], errorQueue: 'amqp-retry.delay.error', parked: -1 },
    ]);
    expect(text.split('\n')).toEqual([
      'orders: 2 ready, tiers 1, parked 3 in orders.error',
      'amqp-retry.delay.ready (delay ladder): 0 due, parked missing (undeliverable) in amqp-retry.delay.error',
    ]);
  });

  it('heads both groupings of the summary', () => {
    const text = formatSummary({ total: 3, byReason: [{ reason: 'exhausted', count: 3 }], byError: [{ error: 'declined', count: 3 }] });
    expect(text.split('\n')).toEqual(['3 parked', 'By reason:', '       3  exhausted', 'By error:', '       3  declined']);
  });
});
