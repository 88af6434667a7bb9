import { KeySequencer, type HoldBreak, type KeyTurn } from './key.sequencer.js';

/** A schedule the test fires by hand. */
function manualClock() {
  const timers: Array<{ run: () => void; ms: number; cancelled: boolean }> = [];
  return {
    timers,
    schedule: (run: () => void, ms: number) => {
      const timer = { run, ms, cancelled: false };
      timers.push(timer);
      return () => void (timer.cancelled = true);
    },
    fire: () => timers.filter((t) => !t.cancelled).forEach((t) => t.run()),
  };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('KeySequencer', () => {
  it('runs one message of a key at a time, in the order they entered; other keys run beside it', async () => {
    const sequencer = new KeySequencer(10);
    const order: string[] = [];
    const turns = new Map<string, KeyTurn>();
    const take = (key: string, owner: string) =>
      void sequencer.enter(key, owner).then((turn) => {
        order.push(owner);
        turns.set(owner, turn!);
      });
    take('a', 'a1');
    take('a', 'a2');
    take('b', 'b1');
    take('a', 'a3');
    await flush();
    expect(order).toEqual(['a1', 'b1']);
    turns.get('a1')!.leave();
    await flush();
    expect(order).toEqual(['a1', 'b1', 'a2']);
    turns.get('a2')!.leave();
    await flush();
    expect(order).toEqual(['a1', 'b1', 'a2', 'a3']);
    turns.get('a3')!.leave();
    turns.get('b1')!.leave();
    expect(sequencer.size).toBe(0);
  });

  it('a waiter whose signal aborts leaves the line and resolves undefined', async () => {
    const sequencer = new KeySequencer(10);
    const first = await sequencer.enter('k', 'm1');
    const abort = new AbortController();
    const second = sequencer.enter('k', 'm2', abort.signal);
    const third = sequencer.enter('k', 'm3');
    abort.abort();
    expect(await second).toBeUndefined();
    first!.leave();
    const turn = await third;
    expect(turn).toBeDefined();
    turn!.leave();
    expect(sequencer.size).toBe(0);
  });

  it('hold: later messages wait until the retried owner comes back, which runs ahead of them', async () => {
    const clock = manualClock();
    const sequencer = new KeySequencer(10, undefined, clock.schedule);
    const order: string[] = [];
    const first = await sequencer.enter('k', 'm1');
    const later = sequencer.enter('k', 'm2').then((turn) => (order.push('m2'), turn));
    first!.leave({ owner: 'm1', ms: 5_000 });
    await flush();
    expect(order).toEqual([]); // held
    const retried = await sequencer.enter('k', 'm1'); // the retry comes back behind m2, and goes first
    order.push('m1');
    expect(clock.timers[0]).toMatchObject({ ms: 5_000, cancelled: true });
    retried!.leave(); // succeeded: the hold ends
    (await later)!.leave();
    expect(order).toEqual(['m1', 'm2']);
    expect(sequencer.size).toBe(0);
  });

  it('tryEnter: a turn at once when the key is free or held for this owner, else nothing and no place taken', () => {
    const clock = manualClock();
    const sequencer = new KeySequencer(10, undefined, clock.schedule);
    const first = sequencer.tryEnter('k', 'm1')!;
    expect(sequencer.tryEnter('k', 'm2')).toBeUndefined(); // m1 runs
    first.leave({ owner: 'm1', ms: 5_000 });
    expect(sequencer.tryEnter('k', 'm2')).toBeUndefined(); // held for m1's retry
    const retried = sequencer.tryEnter('k', 'm1')!;
    expect(clock.timers[0].cancelled).toBe(true);
    retried.leave();
    expect(sequencer.size).toBe(0);
    sequencer.tryEnter('k', 'm2')!.leave();
    expect(sequencer.size).toBe(0);
  });

  it('hold: a retry that fails again holds again; one that settles lets the key move on', async () => {
    const clock = manualClock();
    const sequencer = new KeySequencer(10, undefined, clock.schedule);
    const first = await sequencer.enter('k', 'm1');
    let m2Ran = false;
    const later = sequencer.enter('k', 'm2').then((turn) => ((m2Ran = true), turn));
    first!.leave({ owner: 'm1', ms: 100 });
    (await sequencer.enter('k', 'm1'))!.leave({ owner: 'm1', ms: 200 });
    await flush();
    expect(m2Ran).toBe(false);
    (await sequencer.enter('k', 'm1'))!.leave(); // parked or succeeded
    await flush();
    expect(m2Ran).toBe(true);
    (await later)!.leave();
  });

  it('hold: expires after its time, letting the waiting messages run, and says so', async () => {
    const clock = manualClock();
    const breaks: HoldBreak[] = [];
    const sequencer = new KeySequencer(10, (b) => breaks.push(b), clock.schedule);
    const first = await sequencer.enter('k', 'm1');
    const later = sequencer.enter('k', 'm2');
    first!.leave({ owner: 'm1', ms: 100 });
    clock.fire();
    (await later)!.leave();
    expect(breaks).toEqual([{ key: 'k', owner: 'm1', waiting: 1, why: 'expired' }]);
    // The late retry is an ordinary message now: it runs when it comes.
    const late = await sequencer.enter('k', 'm1');
    late!.leave();
    expect(sequencer.size).toBe(0);
  });

  it('hold: never keeps more than maxHeldWaiting messages waiting behind holds (the retry needs a prefetch slot)', async () => {
    const clock = manualClock();
    const breaks: HoldBreak[] = [];
    const sequencer = new KeySequencer(2, (b) => breaks.push(b), clock.schedule);
    const a = await sequencer.enter('a', 'a1');
    a!.leave({ owner: 'a1', ms: 1_000 });
    const a2 = sequencer.enter('a', 'a2');
    const a3 = sequencer.enter('a', 'a3');
    await flush();
    expect(breaks).toEqual([]);
    const a4 = sequencer.enter('a', 'a4'); // the third waiter: the hold gives way
    expect(breaks).toEqual([{ key: 'a', owner: 'a1', waiting: 3, why: 'full' }]);
    for (const next of [a2, a3, a4]) (await next)!.leave();
    expect(sequencer.size).toBe(0);
  });

  it('hold: a limit given as a function is read as messages join, so a prefetch that shrank (half-open) breaks the hold', async () => {
    const breaks: HoldBreak[] = [];
    let limit = 9;
    const sequencer = new KeySequencer(
      () => limit,
      (b) => breaks.push(b),
      manualClock().schedule,
    );
    (await sequencer.enter('k', 'm1'))!.leave({ owner: 'm1', ms: 1_000 });
    const m2 = sequencer.enter('k', 'm2');
    expect(breaks).toEqual([]);
    limit = 0; // the consumer now takes one delivery at a time: m3 would wait in the place the retry needs
    const m3 = sequencer.enter('k', 'm3');
    expect(breaks).toEqual([{ key: 'k', owner: 'm1', waiting: 2, why: 'full' }]);
    for (const next of [m2, m3]) (await next)!.leave();
    expect(sequencer.size).toBe(0);
  });

  it('hold with a limit of 0 (prefetch 1) lets the next message through at once', async () => {
    const breaks: HoldBreak[] = [];
    const sequencer = new KeySequencer(0, (b) => breaks.push(b), manualClock().schedule);
    (await sequencer.enter('k', 'm1'))!.leave({ owner: 'm1', ms: 1_000 });
    const next = await sequencer.enter('k', 'm2');
    expect(next).toBeDefined();
    expect(breaks).toEqual([{ key: 'k', owner: 'm1', waiting: 1, why: 'full' }]);
    next!.leave();
    expect(sequencer.size).toBe(0);
  });
});
