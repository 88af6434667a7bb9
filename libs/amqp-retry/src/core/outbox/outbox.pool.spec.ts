import { relayPoolProblem } from './outbox.pool.js';

describe('relayPoolProblem', () => {
  it('refuses a pool that LISTEN alone would hold, saying what holds what and the size to give', () => {
    expect(relayPoolProblem(1, 2, true)).toEqual({
      refuse: true,
      problem:
        "is on a pool of at most 1 connection, which the relay's LISTEN would hold for good: no round of the relay, nor any transaction of yours, would get one (the outbox relay needs 3: its LISTEN holds one for good and each of its 2 rounds at once takes one)",
      fix: expect.stringMatching(/^Give the pool at least 4 \(the relay's 3, and one for your own transactions/),
    });
  });

  it('warns of a pool the relay can fill at once', () => {
    expect(relayPoolProblem(3, 2, true)).toMatchObject({
      refuse: false,
      problem: expect.stringMatching(/at most 3 connections, which the outbox relay can fill at once \(it needs 3/),
    });
    expect(relayPoolProblem(2, 2, true)?.refuse).toBe(false);
    expect(relayPoolProblem(1, 1, false)).toMatchObject({ refuse: false, fix: expect.stringMatching(/at least 2/) });
  });

  it('takes a pool large enough, or one of unknown size', () => {
    expect(relayPoolProblem(4, 2, true)).toBeUndefined();
    expect(relayPoolProblem(10, 2, true)).toBeUndefined();
    expect(relayPoolProblem(2, 1, false)).toBeUndefined();
    expect(relayPoolProblem(undefined, 2, true)).toBeUndefined();
  });
});
