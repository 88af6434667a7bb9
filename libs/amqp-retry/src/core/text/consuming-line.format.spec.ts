import { consumingLine, describePolicy } from './consuming-line.format.js';

describe('consumingLine', () => {
  const queue = { queue: 'shipping', errorQueue: 'shipping.error', maxAttempts: 2, delaysMs: [1000] };

  it("tells the queue's policy", () => {
    expect(consumingLine(queue)).toBe('Consuming "shipping": 2 attempts, retries after 1s, parking in "shipping.error"');
  });

  it('adds each pattern that runs a policy of its own, so the line is true for its messages', () => {
    const line = consumingLine(queue, [
      { pattern: 'order.paid', maxAttempts: 3, delaysMs: [300, 1500] },
      { pattern: '{"cmd":"bill"}', maxAttempts: 1, delaysMs: [1000] },
    ]);
    expect(line).toBe(
      'Consuming "shipping": 2 attempts, retries after 1s, parking in "shipping.error"; ' +
        'pattern "order.paid": 3 attempts, retries after 300ms, 1500ms; pattern "{\\"cmd\\":\\"bill\\"}": 1 attempt, no retries',
    );
  });

  it('says "no retries" for a single attempt rather than listing delays never used', () => {
    expect(describePolicy({ maxAttempts: 1, delaysMs: [1000] })).toBe('1 attempt, no retries');
    expect(describePolicy({ maxAttempts: 4, delaysMs: [60_000, 3_600_000] })).toBe('4 attempts, retries after 1m, 1h');
  });
});
