import { DelayHeader } from '../headers/header.names.js';
import { delayLevels, planDelayTopology } from './delay.plan.js';
import { planGiveBack, REFUSED_HOLD, RefusedTargets } from './refused-target.policy.js';

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

  it("publishes into the ladder, due 1 s later the first time, doubling to 30 s, the publisher's delay and due time kept", () => {
    const first = planGiveBack({ headers: asked, expiration: '60000', messageId: 'm' }, target, NOW, 'amqp-retry.delay', undefined, () => 1);
    expect(first.delayMs).toBe(1_000);
    const levels = delayLevels(1_000);
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
    for (let i = 0; i < 7; i++) {
      const back = planGiveBack({ headers }, target, NOW, 'amqp-retry.delay', undefined, () => 1);
      delays.push(back.delayMs);
      headers = back.properties.headers!;
    }
    expect(delays).toEqual([2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
    expect(headers[DelayHeader.givenBack]).toBe(8);
    // Refused with a 403: the application that may deliver it, sharing the ladder, must get it soon.
    expect(planGiveBack({ headers }, target, NOW, 'amqp-retry.delay', REFUSED_HOLD, () => 1).delayMs).toBe(5_000);
  });

  it('refuses a message whose x-death the ladder must not carry', () => {
    expect(() => planGiveBack({ headers: { 'x-death': [1] } }, target, NOW, 'amqp-retry.delay')).toThrow(TypeError);
  });
});
