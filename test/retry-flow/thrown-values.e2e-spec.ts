import { handlerFor, handlerOf, startApp } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { headersOf, settleWindow, SUITE_OPTIONS, useSuite } from '../support/suite.js';

/** An Error subclass whose `name` cannot be read: its stack and its String() throw too. */
class NamelessError extends Error {
  override get name(): string {
    throw new Error('name getter');
  }
}

const thrower = () => {
  throw new Error('trap');
};

/** Values a handler may throw, many of which have no string form. */
const SHAPES: Array<[string, () => unknown]> = [
  ['Object.create(null)', () => Object.create(null)],
  [
    'an Error whose message is a number',
    () => {
      const error = new Error('placeholder');
      (error as { message: unknown }).message = 42;
      return error;
    },
  ],
  ['an object whose toString throws', () => ({ toString: thrower })],
  [
    'an object whose message getter throws',
    () => ({
      get message(): string {
        throw new Error('message getter');
      },
    }),
  ],
  [
    'a Proxy that throws on every trap',
    () => new Proxy({}, new Proxy({}, { get: () => thrower })), // every trap the handler is asked for throws
  ],
  ['a Symbol', () => Symbol('boom')],
  ['a BigInt', () => 12345678901234567890n],
  ['undefined', () => undefined],
  ['null', () => null],
  ['a frozen object', () => Object.freeze({ code: 'E_FROZEN' })],
  [
    'a circular object',
    () => {
      const circular: Record<string, unknown> = { code: 'E_LOOP' };
      circular.self = circular;
      return circular;
    },
  ],
  ['an Error subclass whose name getter throws', () => new NamelessError('nameless')],
];

describe('any thrown value retries or parks, and every delivery is settled', () => {
  const suite = useSuite('e2e.thrown');

  it.each(SHAPES)('%s: 2 handler calls, parked once as exhausted, and the queue keeps going (prefetch 1)', async (_, shape) => {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, prefetch: 1, maxAttempts: 2, delays: ['50ms'] }, (payload) => {
      if ((payload as { kind: string }).kind === 'bad') throw shape();
    });
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    const calls = handlerOf(suite.app, Handler).calls;
    const callsOf = (kind: string) => calls.filter((c) => (c.payload as { kind: string }).kind === kind).length;

    await broker.publish('', queue, { kind: 'bad' });
    await broker.publish('', queue, { kind: 'good', n: 1 });
    // Wait for the final state; on a stall this times out and the assertions below say what happened instead.
    await waitFor(async () => (await broker.count(`${queue}.error`)) === 1 && callsOf('good') === 1, 'the park and the good message').catch(
      () => undefined,
    );
    await broker.publish('', queue, { kind: 'good', n: 2 }); // published after the park: the consumer still runs
    await waitFor(() => callsOf('good') === 2, 'the good message published after the park', 5_000).catch(() => undefined);
    await settleWindow(300); // a bounded window for an extra call or a second parked copy to show up

    const parked = await broker.drain(`${queue}.error`);
    expect({ badCalls: callsOf('bad'), goodCalls: callsOf('good'), parked: parked.length }).toEqual({ badCalls: 2, goodCalls: 2, parked: 1 });
    const headers = headersOf(parked[0]);
    expect(headers['x-parked-reason']).toBe('exhausted');
    expect(headers['x-retry-attempts']).toBe(2);
    expect(typeof headers['x-exception-message']).toBe('string');
    expect((headers['x-exception-message'] as string).length).toBeGreaterThan(0);
    expect(JSON.parse(parked[0].content.toString())).toEqual({ kind: 'bad' });
    expect(await broker.count(queue)).toBe(0);
  });
});
