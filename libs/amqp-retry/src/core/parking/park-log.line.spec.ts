import { MAX_LOGGED_ERROR_BYTES, parkLogLine, type ParkLogFacts } from './park-log.line.js';

const facts = (over: Partial<ParkLogFacts> = {}): ParkLogFacts => ({
  queue: 'orders',
  errorQueue: 'orders.error',
  reason: 'non-retryable',
  handlerCalls: 1,
  messageId: 'm-7',
  parkedId: '5c0f',
  error: 'unknown customer',
  ...over,
});

describe('parkLogLine', () => {
  it('names the reason, the queues, the message id, the parked id and the error, on one line', () => {
    expect(parkLogLine(facts())).toBe(
      'Parked a message from "orders" in "orders.error" (non-retryable after 1 attempt, message id "m-7", parked id "5c0f"): unknown customer',
    );
  });

  it('says when the message had no id, and counts attempts in the plural', () => {
    expect(parkLogLine(facts({ messageId: undefined, parkedId: undefined, reason: 'exhausted', handlerCalls: 5 }))).toBe(
      'Parked a message from "orders" in "orders.error" (exhausted after 5 attempts, no message id): unknown customer',
    );
  });

  it('keeps a multi-line error message on one line and cuts a huge one', () => {
    const line = parkLogLine(facts({ error: `first\n  second\r\nthird ${'x'.repeat(100_000)}` }));
    expect(line).not.toMatch(/[\r\n]/);
    expect(line).toContain('first second third x');
    expect(Buffer.byteLength(line)).toBeLessThan(MAX_LOGGED_ERROR_BYTES + 200);
  });

  it('quotes a hostile message id without breaking the line', () => {
    const line = parkLogLine(facts({ messageId: 'a"\nb' }));
    expect(line).toContain('message id "a\\"\\nb"');
    expect(line).not.toContain('\n');
  });

  it('escapes the control characters of an error that quotes a body', () => {
    const line = parkLogLine(facts({ error: `Unexpected token '\u001b', "\u001b[2J\u001b]0;owned\u0007{bad" is not valid JSON\u009b` }));
    expect(line).toContain(`Unexpected token '\\u001b', "\\u001b[2J\\u001b]0;owned\\u0007{bad" is not valid JSON\\u009b`);
    // eslint-disable-next-line no-control-regex -- control characters are exactly what it looks for
    expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });
});
