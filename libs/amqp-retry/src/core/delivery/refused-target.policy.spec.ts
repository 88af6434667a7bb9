import { RefusedTargets } from './refused-target.policy.js';

const hold = { initialDelayMs: 1_000, maxDelayMs: 5_000 };

describe('RefusedTargets', () => {
  it('holds an exchange after a refusal, longer after each, and forgets it once a publish goes through', () => {
    const targets = new RefusedTargets(hold, 60_000);
    expect(targets.isHeld('teamb.orders', 0)).toBe(false);
    targets.refused('teamb.orders', 0);
    expect(targets.isHeld('teamb.orders', 500)).toBe(true);
    expect(targets.isHeld('teamb.orders', 1_000)).toBe(false); // the next try is due
    targets.refused('teamb.orders', 1_000);
    targets.refused('teamb.orders', 3_000);
    const afterThree = [...Array(40).keys()].map((s) => s * 1_000 + 3_000).find((t) => !targets.isHeld('teamb.orders', t));
    expect(afterThree).toBeGreaterThan(3_000 + 2_000); // backs off
    expect(targets.isHeld('other', 3_000)).toBe(false); // one exchange's refusals hold no other
    targets.delivered('teamb.orders');
    expect(targets.isHeld('teamb.orders', 3_001)).toBe(false);
  });

  it('holds a message for at least the first delay and at most the last, never spinning on it', () => {
    const targets = new RefusedTargets(hold, 60_000);
    targets.refused('x', 0);
    expect(targets.giveBack('x', 0).holdMs).toBeGreaterThanOrEqual(500);
    expect(targets.giveBack('x', 0).holdMs).toBeLessThanOrEqual(1_000);
    for (let i = 0; i < 20; i++) targets.refused('x', 0); // a burst under way together: one round
    expect(targets.giveBack('x', 0).holdMs).toBeLessThanOrEqual(1_000);
    let t = 0;
    for (let round = 0; round < 10; round++) {
      while (targets.isHeld('x', t)) t += 100; // the next try is due: a new round
      targets.refused('x', t);
    }
    expect(targets.giveBack('x', t).holdMs).toBeGreaterThanOrEqual(4_000); // the policy's jitter takes up to a fifth
    expect(targets.giveBack('x', t).holdMs).toBeLessThanOrEqual(5_000);
  });

  it('logs the first give-back at once, then one line a minute with how many were given back meanwhile', () => {
    const targets = new RefusedTargets(hold, 60_000);
    targets.refused('x', 0);
    expect(targets.giveBack('x', 0).log).toBe(1);
    const quiet = [1_000, 2_000, 30_000].map((t) => targets.giveBack('x', t).log);
    expect(quiet).toEqual([undefined, undefined, undefined]);
    expect(targets.giveBack('x', 60_000).log).toBe(4);
  });

  it('remembers a bounded number of exchanges: the target comes from a message header', () => {
    const targets = new RefusedTargets(hold, 60_000, 3);
    for (const exchange of ['a', 'b', 'c', 'd']) targets.refused(exchange, 0);
    expect(['a', 'b', 'c', 'd'].map((e) => targets.isHeld(e, 10))).toEqual([false, true, true, true]);
  });
});
