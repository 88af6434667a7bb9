import { DeliveryGate, type GatePass, linkPass, mayRun, waitAside } from './delivery.gate.js';

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

  it('runs an exclusive handler beside one waiting aside (for its key), which keeps its place; it rejoins after the exclusive one', async () => {
    const { gate, started, pass, enter } = harness(3);
    enter('held');
    await tick();
    enter('suspect', true);
    enter('new');
    await tick();
    expect(started).toEqual(['held']);
    pass('held').stepAside();
    await tick();
    expect(started).toEqual(['held', 'suspect']);
    let rejoined = false;
    void pass('held')
      .rejoin()
      ?.then(() => (rejoined = true));
    await tick();
    expect(rejoined).toBe(false); // never beside the exclusive one
    expect(started).toEqual(['held', 'suspect']);
    pass('suspect').leave();
    await tick();
    expect(rejoined).toBe(true);
    expect(started).toEqual(['held', 'suspect', 'new']);
    expect(gate.size).toBe(2);
  });

  it('counts a handler waiting aside toward the limit', async () => {
    const { started, pass, enter } = harness(1);
    enter('held');
    await tick();
    pass('held').stepAside();
    enter('next');
    await tick();
    expect(started).toEqual(['held']);
    expect(pass('held').rejoin()).toBeUndefined(); // nothing before it: on at once
    pass('held').leave();
    await tick();
    expect(started).toEqual(['held', 'next']);
  });

  it('rejoins an exclusive handler that waited aside only once it is alone, before the handlers that have not started', async () => {
    const { started, pass, enter } = harness(5);
    enter('suspect', true);
    await tick();
    pass('suspect').stepAside();
    enter('a');
    await tick();
    expect(started).toEqual(['suspect', 'a']);
    let rejoined = false;
    void pass('suspect')
      .rejoin()
      ?.then(() => (rejoined = true));
    enter('b');
    await tick();
    expect([rejoined, started]).toEqual([false, ['suspect', 'a']]);
    pass('a').leave();
    await tick();
    expect([rejoined, started]).toEqual([true, ['suspect', 'a']]);
    pass('suspect').leave();
    await tick();
    expect(started).toEqual(['suspect', 'a', 'b']);
  });

  it('lets a handler waiting to rejoin go on detached when its channel dies, and a leave while aside frees its place', async () => {
    const { gate, started, pass, enter } = harness(2);
    enter('x', true);
    await tick();
    enter('held');
    await tick();
    expect(started).toEqual(['x']);
    pass('x').stepAside();
    await tick();
    pass('held').stepAside();
    const rejoin = pass('x').rejoin(); // alone among attached: on at once
    expect(rejoin).toBeUndefined();
    let rejoined = false;
    void pass('held')
      .rejoin()
      ?.then(() => (rejoined = true));
    await tick();
    expect(rejoined).toBe(false);
    pass('held').detach();
    await tick();
    expect(rejoined).toBe(true);
    pass('held').leave();
    pass('x').leave();
    expect(gate.size).toBe(0);
  });

  it('waitAside: a value rejoins first; undefined (gave up) goes on at once; no pass linked waits as is', async () => {
    const { started, pass, enter } = harness(3);
    enter('held');
    await tick();
    const message = {};
    linkPass(message, pass('held'));
    let release!: (v: string | undefined) => void;
    const waited = waitAside(message, new Promise<string | undefined>((resolve) => (release = resolve)));
    enter('x', true);
    await tick();
    expect(started).toEqual(['held', 'x']);
    let value: string | undefined;
    void waited.then((v) => (value = v));
    release('turn');
    await tick();
    expect(value).toBeUndefined(); // waits for x
    pass('x').leave();
    await tick();
    expect(value).toBe('turn');
    expect(await waitAside({}, Promise.resolve('as is'))).toBe('as is');
    linkPass(message, pass('held'));
    pass('held').stepAside();
    enter('y', true);
    await tick();
    expect(await waitAside(message, Promise.resolve(undefined))).toBeUndefined();
  });
});

describe('mayRun', () => {
  const count = (running: number, attached: number, exclusiveRunning = false) => ({ running, limit: 2, attached, exclusiveRunning });

  it('admits a new handler below the limit, never beside an exclusive one', () => {
    expect(mayRun(count(1, 1), false, false)).toBe(true);
    expect(mayRun(count(2, 1), false, false)).toBe(false);
    expect(mayRun(count(1, 1, true), false, false)).toBe(false);
  });

  it('admits an exclusive handler only with no attached one: those waiting aside or detached hold places, not it back', () => {
    expect(mayRun(count(1, 1), true, false)).toBe(false);
    expect(mayRun(count(1, 0), true, false)).toBe(true); // one waits aside for its key's turn
    expect(mayRun(count(2, 0), true, false)).toBe(false); // no place free
  });

  it('lets a handler that holds its place go on at the limit, but not beside an exclusive one, nor as one beside others', () => {
    expect(mayRun(count(2, 1), false, true)).toBe(true);
    expect(mayRun(count(2, 1, true), false, true)).toBe(false);
    expect(mayRun(count(2, 1), true, true)).toBe(false);
    expect(mayRun(count(2, 0), true, true)).toBe(true);
  });
});
