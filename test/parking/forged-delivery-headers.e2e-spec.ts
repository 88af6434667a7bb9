import { handlerFor, handlerOf, startApp } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { headersOf, settleWindow, SUITE_OPTIONS, useSuite } from '../support/suite.js';

/** An x-death entry for `queue` shaped like the broker's, with the given count. */
const death = (queue: string, count: unknown) => ({
  queue,
  reason: 'rejected',
  count,
  exchange: '',
  'routing-keys': [queue],
  time: { '!': 'timestamp', value: Math.floor(Date.now() / 1000) },
});

/** Death histories the broker never writes, published by a client. Each must park as malformed before any nack. */
const FORGED: Array<[string, (queue: string) => unknown]> = [
  ['an array holding a string', () => ['garbage']],
  ['an array holding a number next to a valid entry', (queue) => [death(queue, 1), 42]],
  ['an entry with a negative count', (queue) => [death(queue, -1)]],
  ['an entry with a count of 0', (queue) => [death(queue, 0)]],
  ['an entry with a count of 2**53', (queue) => [death(queue, 2 ** 53)]],
  ["an entry with the count '99999999999999999999'", (queue) => [death(queue, '99999999999999999999')]],
  ["an entry with the count '3' (a string)", (queue) => [death(queue, '3')]],
  ['a string instead of an array', () => 'rejected'],
  ['a table instead of an array', (queue) => death(queue, 1)],
];

describe('x-death and x-delivery-count headers the broker did not write', () => {
  const suite = useSuite('e2e.forged.xdeath');

  /** Starts a handler that always succeeds: any call of it for a forged message is a call too many. */
  async function start() {
    const Handler = handlerFor({ queue: suite.queue, prefetch: 1, maxAttempts: 2, delays: ['50ms'] }, () => undefined);
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    const calls = handlerOf(suite.app, Handler).calls;
    return (kind: string) => calls.filter((c) => (c.payload as { kind: string }).kind === kind).length;
  }

  it.each(FORGED)('x-death as %s: parked as malformed without a handler call, and the next message is handled', async (_, forged) => {
    const { broker, queue } = suite;
    const callsOf = await start();
    await broker.publish('', queue, { kind: 'forged' }, { headers: { 'x-death': forged(queue) } });
    await broker.publish('', queue, { kind: 'good' });

    await waitFor(async () => (await broker.count(`${queue}.error`)) === 1 && callsOf('good') === 1, 'the park and the good message', 5_000).catch(
      () => undefined,
    );
    await settleWindow(300); // bounded: a late call of the handler for the forged message would show here

    const parked = await broker.drain(`${queue}.error`);
    expect({ forgedCalls: callsOf('forged'), goodCalls: callsOf('good'), parked: parked.length }).toEqual({
      forgedCalls: 0,
      goodCalls: 1,
      parked: 1,
    });
    const headers = headersOf(parked[0]);
    expect(headers['x-parked-reason']).toBe('malformed');
    expect(headers['x-exception-message']).toMatch(/x-death/);
    expect(headers['x-retry-attempts']).toBe(0);
    expect(JSON.parse(parked[0].content.toString())).toEqual({ kind: 'forged' });
    expect(await broker.count(queue)).toBe(0);
  });

  it('a well-formed forged x-death with a count above maxAttempts parks as exhausted without a handler call', async () => {
    const { broker, queue } = suite;
    const callsOf = await start();
    await broker.publish('', queue, { kind: 'forged' }, { headers: { 'x-death': [death(queue, 50)] } });
    await broker.publish('', queue, { kind: 'good' });

    await waitFor(async () => (await broker.count(`${queue}.error`)) === 1 && callsOf('good') === 1, 'the park and the good message');
    await settleWindow(300); // bounded: a late call for the forged message would show here

    const parked = await broker.drain(`${queue}.error`);
    expect({ forgedCalls: callsOf('forged'), goodCalls: callsOf('good'), parked: parked.length }).toEqual({
      forgedCalls: 0,
      goodCalls: 1,
      parked: 1,
    });
    expect(headersOf(parked[0])['x-parked-reason']).toBe('exhausted');
    expect(await broker.count(queue)).toBe(0);
  });

  it('ignores a publisher-set x-delivery-count on a classic queue: handled once and acked', async () => {
    const { broker, queue } = suite;
    const callsOf = await start();
    await broker.publish('', queue, { kind: 'counted' }, { headers: { 'x-delivery-count': 50 } });
    await broker.publish('', queue, { kind: 'good' });

    await waitFor(() => callsOf('good') === 1, 'the good message published after it');
    await settleWindow(300); // bounded: a park or a redelivery of the counted message would show here

    expect({ countedCalls: callsOf('counted'), parked: await broker.count(`${queue}.error`), left: await broker.count(queue) }).toEqual({
      countedCalls: 1,
      parked: 0,
      left: 0,
    });
  });
});
