import type { ParkedMessages } from '../parked-messages.service.js';
import type { ParkedSelection, PurgeResult, ReplayResult } from '../../core/parking/parked-messages.types.js';
import { ParkedCountChangedError } from '../../errors/parked-count-changed.error.js';
import { EXIT } from './cli.input.js';
import { exportCommand, purgeCommand, replayCommand, type CliIo } from './parked.commands.js';

/**
 * A fake ParkedMessages: unit tests of the commands' decisions; the broker side has its e2e tests. `unnamed`: the
 * parked copies whose queue is unknown, `foreign` the messages the library did not park (an export by `queue: ''`).
 */
function fakeParked(matched: number, failed = 0, unnamed = 0, foreign = 0) {
  const calls: { op: string; selection: ParkedSelection; dryRun?: boolean }[] = [];
  const parked = {
    errorQueueOf: async (queue: string) => `${queue}.error`,
    async *export(selection: ParkedSelection) {
      if (selection.filter?.queue !== '') throw new Error('only the unknown queue is exported here');
      for (let i = 0; i < unnamed; i++) yield JSON.stringify({ id: `u${i}`, queue: '', headers: { 'x-parked-reason': 'exhausted' } });
      for (let i = 0; i < foreign; i++) yield JSON.stringify({ id: `b${i}`, queue: '', headers: {} });
    },
    async purge(selection: ParkedSelection, options: { dryRun?: boolean } = {}): Promise<PurgeResult> {
      calls.push({ op: 'purge', selection, dryRun: options.dryRun });
      return { matched, purged: options.dryRun ? 0 : matched, dryRun: options.dryRun === true };
    },
    async replay(selection: ParkedSelection, options: { dryRun?: boolean } = {}): Promise<ReplayResult> {
      calls.push({ op: 'replay', selection, dryRun: options.dryRun });
      const failures = Array.from({ length: failed }, (_, i) => ({ id: `f${i}`, error: 'gone' }));
      return { matched, replayed: options.dryRun ? 0 : matched - failed, failed: failures, dryRun: options.dryRun === true };
    },
  };
  return { parked: parked as unknown as ParkedMessages, calls };
}

function fakeIo(over: Partial<CliIo> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const questions: string[] = [];
  const io: CliIo = {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    stdinIsTTY: false,
    stderrIsTTY: false,
    confirm: async (q) => (questions.push(q), false),
    progress: () => undefined,
    ...over,
  };
  return { io, out, err, questions };
}

describe('purgeCommand', () => {
  it('refuses without --yes when stdin is not a terminal, before touching anything', async () => {
    const { parked, calls } = fakeParked(2);
    await expect(purgeCommand(parked, { queue: 'q', reason: 'malformed' }, fakeIo().io)).rejects.toThrow(/--yes is missing/);
    expect(calls).toEqual([]);
  });

  it('asks on a terminal, counting first, and purges nothing when the answer is no', async () => {
    const { parked, calls } = fakeParked(2);
    const { io, questions, err } = fakeIo({ stdinIsTTY: true });
    expect(await purgeCommand(parked, { queue: 'q', reason: 'malformed' }, io)).toBe(EXIT.error);
    expect(questions).toEqual(['Purge 2 parked message(s) from "q.error"? This cannot be undone. [y/N] ']);
    expect(calls.map((c) => c.dryRun)).toEqual([true]);
    expect(err).toEqual(['Nothing purged.']);
  });

  it('purges after a yes, and at once with --yes', async () => {
    const yes = fakeParked(2);
    expect(await purgeCommand(yes.parked, { queue: 'q', all: true }, fakeIo({ stdinIsTTY: true, confirm: async () => true }).io)).toBe(EXIT.ok);
    expect(yes.calls.map((c) => c.dryRun)).toEqual([true, undefined]);
    const flag = fakeParked(1);
    expect(await purgeCommand(flag.parked, { queue: 'q', id: ['a'], yes: true }, fakeIo().io)).toBe(EXIT.ok);
    // The queue stays in the filter: another queue's messages may share its parking queue.
    expect(flag.calls).toEqual([{ op: 'purge', selection: { errorQueue: 'q.error', ids: ['a'], filter: { queue: 'q' } }, dryRun: undefined }]);
  });

  it('purges the count confirmed; when more match by then, purges nothing and asks again with the count now', async () => {
    let now = 2;
    const calls: { dryRun?: boolean; expected?: number }[] = [];
    const parked = {
      errorQueueOf: async (queue: string) => `${queue}.error`,
      export: () => (async function* () {})(),
      async purge(_selection: ParkedSelection, options: { dryRun?: boolean; expected?: number } = {}): Promise<PurgeResult> {
        calls.push({ dryRun: options.dryRun, expected: options.expected });
        const matched = now;
        now = 3; // a message parked while the operator read the question
        if (options.expected !== undefined && options.expected !== matched) throw new ParkedCountChangedError('q.error', options.expected, matched);
        return { matched, purged: options.dryRun ? 0 : matched, dryRun: options.dryRun === true };
      },
    } as unknown as ParkedMessages;
    const { io, questions, err, out } = fakeIo({ stdinIsTTY: true, confirm: async (q) => (questions.push(q), true) });
    expect(await purgeCommand(parked, { queue: 'q', reason: 'malformed' }, io)).toBe(EXIT.ok);
    expect(questions.map((q) => q.slice(0, 10))).toEqual(['Purge 2 pa', 'Purge 3 pa']);
    expect(calls).toEqual([{ dryRun: true }, { expected: 2 }, { expected: 3 }]);
    expect(err).toEqual(['3 message(s) match now, not the 2 confirmed: nothing was purged.']);
    expect(out).toEqual(['Purged 3 message(s) from "q.error".']);
  });

  it('says how many messages of the parking queue a --queue selection left because no queue is known for them', async () => {
    const queued = fakeParked(2, 0, 3);
    const { io, out, err } = fakeIo();
    expect(await purgeCommand(queued.parked, { queue: 'q', all: true, yes: true }, io)).toBe(EXIT.ok);
    expect(out).toEqual(['Purged 2 message(s) from "q.error".']);
    expect(err).toEqual([
      '3 other matching message(s) in "q.error" name no queue they failed in (parked without x-original-queue) and were not purged; ' +
        'to purge them, select them by --id with --error-queue "q.error" and no --queue.',
    ]);
    const replay = fakeIo();
    await replayCommand(queued.parked, { queue: 'q', all: true, dryRun: true }, replay.io);
    expect(replay.err).toEqual([
      expect.stringMatching(/^3 other matching message\(s\) in "q.error" name no queue .* and were not counted; to replay them/),
    ]);
    // Messages the library did not park are named, never taken for the queue's.
    const business = fakeIo();
    await replayCommand(fakeParked(1, 0, 0, 2).parked, { queue: 'q', errorQueue: 'invoices', all: true }, business.io);
    expect(business.err).toEqual([
      '2 other matching message(s) in "invoices" were not parked by amqp-retry (no x-parked-reason header) and were left as they are: b0, b1.',
    ]);
    // Without --queue the selection takes them.
    const whole = fakeIo();
    await purgeCommand(fakeParked(5, 0, 3).parked, { errorQueue: 'q.error', all: true, yes: true }, whole.io);
    expect(whole.err).toEqual([]);
  });

  it('wants --all to purge a whole queue, and a queue', async () => {
    await expect(purgeCommand(fakeParked(1).parked, { queue: 'q', yes: true }, fakeIo().io)).rejects.toThrow(/--all is missing/);
    await expect(purgeCommand(fakeParked(1).parked, { reason: 'x', yes: true }, fakeIo().io)).rejects.toThrow(/--queue is missing/);
  });

  it('exits 3 when nothing matched', async () => {
    expect(await purgeCommand(fakeParked(0).parked, { queue: 'q', all: true, yes: true }, fakeIo().io)).toBe(EXIT.nothingMatched);
  });
});

describe('replayCommand', () => {
  it('exits 4 when some stay parked, 3 when none matched, and reports in JSON', async () => {
    const partial = fakeIo();
    expect(await replayCommand(fakeParked(3, 1).parked, { errorQueue: 'e', all: true }, partial.io)).toBe(EXIT.partial);
    expect(partial.err).toEqual(['Left parked f0: gone']);
    expect(await replayCommand(fakeParked(0).parked, { errorQueue: 'e', all: true }, fakeIo().io)).toBe(EXIT.nothingMatched);
    const json = fakeIo();
    expect(await replayCommand(fakeParked(2).parked, { errorQueue: 'e', error: 'card', json: true }, json.io)).toBe(EXIT.ok);
    expect(JSON.parse(json.out[0])).toEqual({ matched: 2, replayed: 2, failed: [], dryRun: false });
  });

  it('shows a progress bar only on a terminal without --json', async () => {
    let bars = 0;
    const progress = () => Object.assign(() => undefined, { stop: () => void bars++ });
    await replayCommand(fakeParked(1).parked, { errorQueue: 'e', all: true }, fakeIo({ stderrIsTTY: true, progress }).io);
    await replayCommand(fakeParked(1).parked, { errorQueue: 'e', all: true, json: true }, fakeIo({ stderrIsTTY: true, progress }).io);
    await replayCommand(fakeParked(1).parked, { errorQueue: 'e', all: true }, fakeIo({ stderrIsTTY: false, progress }).io);
    expect(bars).toBe(1);
  });
});

describe('exportCommand', () => {
  it('exports every parking queue in scope that exists, whatever its depth says: a walk elsewhere holds its messages unacked', async () => {
    const exported: string[] = [];
    const parked = {
      queues: async () => [
        { queue: 'a', errorQueue: 'a.error', parked: 0 }, // being browsed: its messages are unacked, not ready
        { queue: 'b', errorQueue: 'b.error', parked: 2 },
        { queue: 'c', errorQueue: 'c.error', parked: -1 }, // no parking queue
      ],
      async *export(selection: ParkedSelection) {
        exported.push(selection.errorQueue);
        yield `{"errorQueue":"${selection.errorQueue}"}`;
      },
    } as unknown as ParkedMessages;
    const { io, out } = fakeIo();
    expect(await exportCommand(parked, { app: 'orders' }, io)).toBe(EXIT.ok);
    expect(exported).toEqual(['a.error', 'b.error']);
    expect(out).toHaveLength(2);
  });

  it('keeps to the --queue named: another queue may park in the same parking queue', async () => {
    const selections: ParkedSelection[] = [];
    const parked = {
      errorQueueOf: async (queue: string) => `${queue}.error`,
      export(selection: ParkedSelection) {
        selections.push(selection);
        return (async function* () {})();
      },
    } as unknown as ParkedMessages;
    await exportCommand(parked, { queue: 'q', error: 'card' }, fakeIo().io);
    expect(selections).toEqual([{ errorQueue: 'q.error', filter: { queue: 'q', error: 'card' } }]);
  });
});
