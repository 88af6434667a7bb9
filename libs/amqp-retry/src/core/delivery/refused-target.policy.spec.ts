import { DelayHeader } from '../headers/header.names.js';
import { delayLevels, planDelayTopology } from './delay.plan.js';
import { FORBIDDEN_GIVE_BACK_MAX_MS, GIVE_BACK_MAX_MS, giveBackDelay, planGiveBack, RefusedTargets } from './refused-target.policy.js';

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

  it('logs the first give-back at once, then one line a minute with how many were given back meanwhile', () => {
    const targets = new RefusedTargets(hold, 60_000);
    targets.refused('x', 0);
    expect(targets.giveBack('x', 0).log).toBe(1);
    const quiet = [1_000, 2_000, 30_000].map((t) => targets.giveBack('x', t).log);
    expect(quiet).toEqual([undefined, undefined, undefined]);
    expect(targets.giveBack('x', 60_000).log).toBe(4);
    expect(targets.giveBack('never refused', 60_000).log).toBe(1); // a full queue's nack: no 403, the same lines
    expect(targets.giveBack('never refused', 61_000).log).toBeUndefined();
  });

  it('remembers a bounded number of exchanges: the target comes from a message header', () => {
    const targets = new RefusedTargets(hold, 60_000, 3);
    for (const exchange of ['a', 'b', 'c', 'd']) targets.refused(exchange, 0);
    expect(['a', 'b', 'c', 'd'].map((e) => targets.isHeld(e, 10))).toEqual([false, true, true, true]);
  });
});

describe('planGiveBack', () => {
  const target = { exchange: 'orders', routingKey: 'order.paid' };
  const NOW = Date.parse('2030-01-01T00:00:00.000Z');
  const asked = { [DelayHeader.ms]: 100, [DelayHeader.dueAt]: '2029-12-31T23:59:59.000Z', tenant: 'acme' };

  it("publishes into the ladder, due 1 s later the first time, waiting longer each time, the publisher's delay and due time kept", () => {
    const first = planGiveBack({ headers: asked, expiration: '60000', messageId: 'm' }, target, NOW, 'amqp-retry.delay', false, () => 0);
    expect(first.delayMs).toBe(1_024);
    const levels = delayLevels(1_024);
    expect(first.exchange).toBe(`amqp-retry.delay.v1.p0${levels[0].position}`);
    expect(planDelayTopology().exchanges.map((e) => e.name)).toContain(first.exchange);
    expect(first.properties).toMatchObject({ persistent: true, mandatory: true, messageId: 'm' });
    expect(first.properties.expiration).toBeUndefined(); // it rides in a header through the ladder
    expect(first.properties.headers).toMatchObject({
      ...asked,
      [DelayHeader.givenBack]: 1,
      [DelayHeader.targetExchange]: 'orders',
      [DelayHeader.targetRoutingKey]: 'order.paid',
      [DelayHeader.expiration]: '60000',
    });
    let headers = first.properties.headers!;
    const delays = [];
    for (let i = 0; i < 10; i++) {
      const back = planGiveBack({ headers }, target, NOW, 'amqp-retry.delay', false, () => 0);
      delays.push(back.delayMs / 1_024);
      headers = back.properties.headers!;
    }
    expect(delays).toEqual([2, 4, 8, 16, 32, 64, 128, 256, 256, 256]);
    expect(headers[DelayHeader.givenBack]).toBe(11);
    // Refused with a 403: the application that may deliver it, sharing the ladder, must get it soon.
    expect(planGiveBack({ headers }, target, NOW, 'amqp-retry.delay', true, () => 0).delayMs).toBe(32 * 1_024); // its twelfth
  });

  it('bounds the load of a target that keeps refusing: minutes between tries of a message, at most two levels each', () => {
    const waits = (forbidden: boolean, random = () => 0) => Array.from({ length: 40 }, (_, i) => giveBackDelay(i + 1, forbidden, random));
    // A 403: 1 s twice, then doubling every second give-back, to about 65 s.
    expect(
      waits(true)
        .slice(0, 16)
        .map((ms) => ms / 1_024),
    ).toEqual([1, 1, 2, 2, 4, 4, 8, 8, 16, 16, 32, 32, 64, 64, 64, 64]);
    expect(Math.min(...waits(true).slice(13))).toBe(FORBIDDEN_GIVE_BACK_MAX_MS);
    expect(Math.min(...waits(false).slice(8))).toBe(GIVE_BACK_MAX_MS); // 262 s from the ninth on
    expect(GIVE_BACK_MAX_MS).toBeGreaterThanOrEqual(240_000);
    expect(FORBIDDEN_GIVE_BACK_MAX_MS).toBeGreaterThanOrEqual(60_000);
    // 50,000 messages a target keeps refusing: under 200 give-backs a second (770 after a 403).
    expect(50_000 / (GIVE_BACK_MAX_MS / 1_000)).toBeLessThan(200);
    for (const ms of [...waits(true), ...waits(false)]) expect(delayLevels(ms)).toHaveLength(1);
    for (const ms of [...waits(true, () => 0.99), ...waits(false, () => 0.99)]) expect(delayLevels(ms)).toHaveLength(2);
    expect(giveBackDelay(0, false, () => 0)).toBe(1_024);
    expect(giveBackDelay(2 ** 40, true, () => 0)).toBe(FORBIDDEN_GIVE_BACK_MAX_MS);
  });

  it('spreads messages refused together, by up to 7/8 of the digit below the wait', () => {
    expect(giveBackDelay(1, false, () => 0.99)).toBe(1_024 + 7 * 64);
    expect(giveBackDelay(3, false, () => 0.5)).toBe(4_096 + 4 * 512);
    expect(giveBackDelay(20, false, () => 0.99)).toBe(GIVE_BACK_MAX_MS + 7 * 8 ** 5);
  });

  it('gives CC back in a header of the library, a CC property or a CC header left by a copy put in the ladder with one', () => {
    for (const forwarded of [{ headers: asked, CC: ['orders.shard.0'] }, { headers: { ...asked, CC: ['orders.shard.0'] } }]) {
      const back = planGiveBack(forwarded, target, NOW, 'amqp-retry.delay', false, () => 0);
      expect(back.properties).not.toHaveProperty('CC');
      expect(back.properties.headers).not.toHaveProperty('CC');
      expect(back.properties.headers?.[DelayHeader.cc]).toEqual(['orders.shard.0']);
    }
  });

  it('refuses a message whose x-death the ladder must not carry', () => {
    expect(() => planGiveBack({ headers: { 'x-death': [1] } }, target, NOW, 'amqp-retry.delay')).toThrow(TypeError);
  });
});
