import { DeliveryGate, type GatePass } from './delivery.gate.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Enters the gate for each name and records the order of admission. */
function harness(limit: number) {
  const gate = new DeliveryGate(limit);
  const started: string[] = [];
  const passes = new Map<string, GatePass>();
  const enter = (name: string, exclusive = false) =>
    void gate.enter(exclusive).then((pass) => {
      started.push(name);
      passes.set(name, pass);
    });
  return { gate, started, pass: (name: string) => passes.get(name)!, enter };
}

describe('DeliveryGate', () => {
  it('admits up to the limit, then one per handler that leaves', async () => {
    const { gate, started, pass, enter } = harness(2);
    for (const name of ['a', 'b', 'c']) enter(name);
    await tick();
    expect(started).toEqual(['a', 'b']);
    pass('a').leave();
    await tick();
    expect(started).toEqual(['a', 'b', 'c']);
    expect(gate.size).toBe(2);
  });

  it('runs an exclusive handler alone: after those before it, before those after it', async () => {
    const { started, pass, enter } = harness(5);
    enter('a');
    enter('b');
    enter('x', true);
    enter('c');
    await tick();
    expect(started).toEqual(['a', 'b']);
    pass('a').leave();
    await tick();
    expect(started).toEqual(['a', 'b']);
    pass('b').leave();
    await tick();
    expect(started).toEqual(['a', 'b', 'x']);
    pass('x').leave();
    await tick();
    expect(started).toEqual(['a', 'b', 'x', 'c']);
  });

  it('lets an exclusive handler run beside detached ones (a dead channel), which still count toward the limit', async () => {
    const { gate, started, pass, enter } = harness(2);
    enter('hung');
    enter('x', true);
    enter('y', true);
    await tick();
    expect(started).toEqual(['hung']);
    pass('hung').detach();
    await tick();
    expect(started).toEqual(['hung', 'x']);
    pass('x').detach(); // x's channel died too: y may run, but the limit of 2 is reached
    await tick();
    expect(started).toEqual(['hung', 'x']);
    pass('hung').leave();
    await tick();
    expect(started).toEqual(['hung', 'x', 'y']);
    expect(gate.size).toBe(2);
  });

  it('ignores a second leave or detach of the same handler', async () => {
    const { gate, pass, enter } = harness(1);
    enter('a');
    await tick();
    pass('a').detach();
    pass('a').leave();
    pass('a').leave();
    pass('a').detach();
    expect(gate.size).toBe(0);
    enter('b');
    await tick();
    expect(gate.size).toBe(1);
  });
});
