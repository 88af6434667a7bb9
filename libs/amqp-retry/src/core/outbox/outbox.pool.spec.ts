import { relayPoolProblem } from './outbox.pool.js';

describe('relayPoolProblem', () => {
  it('refuses a pool smaller than the relay and one more connection, saying what holds them', () => {
    expect(relayPoolProblem(1, 2, true)).toEqual({
      problem:
        'is on a pool of at most 1 connection, and the outbox relay alone needs 3 (its LISTEN holds one for good and each of its 2 rounds at once takes one)',
      fix: expect.stringMatching(/^Give the pool at least 4 \(the relay's 3, and one for your own transactions/),
    });
    expect(relayPoolProblem(3, 2, true)?.problem).toMatch(/at most 3 connections/);
    expect(relayPoolProblem(2, 2, false)?.fix).toMatch(/at least 3/);
  });

  it('takes a pool large enough, or one of unknown size', () => {
    expect(relayPoolProblem(4, 2, true)).toBeUndefined();
    expect(relayPoolProblem(10, 2, true)).toBeUndefined();
    expect(relayPoolProblem(2, 1, false)).toBeUndefined();
    expect(relayPoolProblem(undefined, 2, true)).toBeUndefined();
  });
});
