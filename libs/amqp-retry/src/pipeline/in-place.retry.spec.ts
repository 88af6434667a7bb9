import type { RetryContext } from '../core/delivery/retry.context.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import { RetriedInPlace, retryInPlace } from './in-place.retry.js';
import { withHandlerTimeout } from './time-limit.step.js';

const warnings: string[] = [];
const logger = { log: () => undefined, warn: (line: string) => void warnings.push(line), error: () => undefined, debug: () => undefined };
const config = {
  queue: 'q.p0',
  maxAttempts: 3,
  delaysMs: [5, 10],
  isRetryable: (e: unknown) => !(e instanceof NonRetryableError),
  retryLogs: 'line' as const,
};
const context = (signal = new AbortController().signal): RetryContext =>
  ({ attempt: 1, maxAttempts: 3, isLastAttempt: false, queue: 'q.p0', message: {}, deaths: [], signal }) as unknown as RetryContext;

describe('retryInPlace', () => {
  it('calls again after each tier delay, with the next attempt, until the handler succeeds', async () => {
    const calls: Array<[number, boolean, number]> = [];
    const started = Date.now();
    const result = await retryInPlace(
      async (_payload, ctx) => {
        calls.push([ctx.attempt, ctx.isLastAttempt, Date.now() - started]);
        if (ctx.attempt < 3) throw new Error(`fail ${ctx.attempt}`);
        return 'done';
      },
      {},
      context(),
      config,
      logger,
    );
    expect(result).toBe('done');
    expect(calls.map(([attempt, last]) => [attempt, last])).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    expect(calls[2][2]).toBeGreaterThanOrEqual(5 + 10 - 2); // waited both tiers (timer granularity aside)
    expect(warnings).toContain('"q.p0" attempt 1/3 failed: fail 1; retrying in place in 5ms (its key waits)');
  });

  it('gives up with the last failure and its attempt once the attempts are spent, or at once when non-retryable', async () => {
    const always = async () => {
      throw new Error('down');
    };
    const spent = await retryInPlace(always, {}, context(), config, logger).catch((e: unknown) => e);
    expect(spent).toBeInstanceOf(RetriedInPlace);
    expect((spent as RetriedInPlace).attempt).toBe(3);
    expect(((spent as RetriedInPlace).failure as Error).message).toBe('down');
    const refused = new NonRetryableError('bad');
    const early = await retryInPlace(() => Promise.reject(refused), {}, context(), config, logger).catch((e: unknown) => e);
    expect(early).toEqual(expect.objectContaining({ attempt: 1, failure: refused }));
  });

  it('stops waiting when the delivery is abandoned (a hand-over), leaving the attempt it reached', async () => {
    const abort = new AbortController();
    let calls = 0;
    const running = retryInPlace(
      async () => {
        calls++;
        throw new Error('fails');
      },
      {},
      context(abort.signal),
      { ...config, delaysMs: [60_000] },
      logger,
    ).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 20));
    abort.abort();
    const failure = await running;
    expect(failure).toEqual(expect.objectContaining({ attempt: 1 }));
    expect(calls).toBe(1);
  });

  it('recognises its own failure, and never throws on a thrown value that throws from every trap', () => {
    const own = new RetriedInPlace(new Error('x'), 2);
    const hostile = new Proxy(
      {},
      {
        getPrototypeOf() {
          throw new Error('trap');
        },
      },
    );
    expect(RetriedInPlace.from(own)).toBe(own);
    expect(RetriedInPlace.from(new Error('plain'))).toBeUndefined();
    expect(RetriedInPlace.from(hostile)).toBeUndefined();
  });

  it('starts the next attempt after a timed-out one has ended, not beside it', async () => {
    const events: string[] = [];
    const timed = withHandlerTimeout(
      async (_payload, ctx) => {
        events.push(`start ${ctx.attempt}`);
        await new Promise((resolve) => setTimeout(resolve, ctx.attempt === 1 ? 80 : 1));
        events.push(`end ${ctx.attempt}`);
        return 'done';
      },
      50,
      'q.p0',
    );
    await expect(retryInPlace(timed, {}, context(), config, logger)).resolves.toBe('done');
    expect(events).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
  });

  it('stops waiting for a timed-out call when its delivery is taken back, and runs no other attempt', async () => {
    const taken = new AbortController();
    const never = withHandlerTimeout(() => new Promise(() => undefined), 300, 'q.p0');
    const started = Date.now();
    setTimeout(() => taken.abort(), 350);
    await expect(retryInPlace(never, {}, context(taken.signal), config, logger)).rejects.toBeInstanceOf(RetriedInPlace);
    expect(Date.now() - started).toBeLessThan(500); // not the 600 ms of one more timeout
  });
});
