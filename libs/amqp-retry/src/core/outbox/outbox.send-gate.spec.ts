import { SendGate } from './outbox.send-gate.js';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('SendGate', () => {
  it('runs shared work together', async () => {
    const gate = new SendGate();
    const a = deferred();
    const b = deferred();
    const started: string[] = [];
    const runs = [gate.run(false, () => (started.push('a'), a.promise)), gate.run(false, () => (started.push('b'), b.promise))];
    await tick();
    expect(started).toEqual(['a', 'b']);
    a.resolve();
    b.resolve();
    await Promise.all(runs);
  });

  it('runs alone work once nothing is in flight, and holds back what comes after it until it ends', async () => {
    const gate = new SendGate();
    const first = deferred();
    const big = deferred();
    const log: string[] = [];
    const runs = [
      gate.run(false, async () => (log.push('first starts'), await first.promise, log.push('first ends'))),
      gate.run(true, async () => (log.push('big starts'), await big.promise, log.push('big ends'))),
      gate.run(false, async () => log.push('after runs')),
    ];
    await tick();
    expect(log).toEqual(['first starts']);
    first.resolve();
    await tick();
    expect(log).toEqual(['first starts', 'first ends', 'big starts']);
    big.resolve();
    await Promise.all(runs);
    expect(log).toEqual(['first starts', 'first ends', 'big starts', 'big ends', 'after runs']);
  });

  it('runs alone work one at a time, in order, and passes results and errors through', async () => {
    const gate = new SendGate();
    const log: number[] = [];
    const results = await Promise.allSettled([
      gate.run(true, async () => (log.push(1), await tick(), log.push(1), 'one')),
      gate.run(true, async () => {
        log.push(2);
        await tick();
        log.push(2);
        throw new Error('refused');
      }),
      gate.run(false, async () => 'three'),
    ]);
    expect(log).toEqual([1, 1, 2, 2]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(['one', 'refused', 'three']);
  });
});
