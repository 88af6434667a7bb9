import { handlerFor, handlerOf, startApp } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { headersOf, settleWindow, SUITE_OPTIONS, useSuite } from '../support/suite.js';

/** After the park, how long to keep counting handler calls to show that the message is not run again. */
const RERUN_WINDOW_MS = 2_000;

/** Names listed in `x-parked-dropped-headers` (a list, or one comma-separated string). */
function droppedHeaders(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String);
  return typeof value === 'string' ? value.split(/\s*,\s*/).filter((name) => name !== '') : [];
}

describe('a park that cannot complete as first tried never re-runs the handler', () => {
  const suite = useSuite('e2e.unparkable');

  /** Starts a handler that always throws `error()`, publishes one message, and waits for its park (or gives up). */
  async function failAndPark(error: () => Error, headers: Record<string, unknown> = {}, beforePublish?: () => Promise<unknown>) {
    const { broker, queue } = suite;
    const Handler = handlerFor({ queue, maxAttempts: 2, delays: ['50ms'] }, () => {
      throw error();
    });
    suite.app = await startApp([Handler], SUITE_OPTIONS);
    await beforePublish?.();
    await broker.publish('', queue, { id: 1 }, { headers });
    const calls = handlerOf(suite.app, Handler).calls;
    await waitFor(async () => (await broker.count(`${queue}.error`)) === 1, 'the parked copy', 8_000).catch(() => undefined);
    await settleWindow(RERUN_WINDOW_MS); // bounded: any re-run of the handler after the park would show here
    // a get on a missing queue would close the test's channel: look first
    const parked = (await broker.exists(`${queue}.error`)) ? await broker.drain(`${queue}.error`) : [];
    return { calls: calls.length, parked, left: await broker.count(queue) };
  }

  it('parks a message with about 60 KB of headers once, after exactly maxAttempts calls', async () => {
    // amqplib encodes a header table in a 64 KiB buffer, so about 60 KB is as much as a test client can publish (the
    // 100 KB of the finding need another client); the parked copy adds the parking headers on top (the exception
    // message and stack of a 3 KB error), which then no longer fit in one table.
    const headers: Record<string, string> = {};
    for (let i = 0; i < 120; i++) headers[`h${String(i).padStart(3, '0')}`] = `${i}:`.padEnd(500, 'x');
    const result = await failAndPark(() => new Error(`the order service said: ${'e'.repeat(3 * 1024)}`), headers);

    expect({ calls: result.calls, parked: result.parked.length, left: result.left }).toEqual({ calls: 2, parked: 1, left: 0 });
    const parkedHeaders = headersOf(result.parked[0]);
    expect(parkedHeaders).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 2 });
    const dropped = droppedHeaders(parkedHeaders['x-parked-dropped-headers']);
    for (const [name, value] of Object.entries(headers)) {
      // every original header is kept unchanged, or listed as dropped
      if (!dropped.includes(name)) expect(parkedHeaders[name]).toBe(value);
    }
    expect(dropped.every((name) => name in headers)).toBe(true);
  });

  it('parks a handler error with a 1 MB message once, with x-exception-message under 8 KB', async () => {
    const result = await failAndPark(() => new Error('m'.repeat(1024 * 1024)));

    expect({ calls: result.calls, parked: result.parked.length, left: result.left }).toEqual({ calls: 2, parked: 1, left: 0 });
    const parkedHeaders = headersOf(result.parked[0]);
    expect(parkedHeaders['x-parked-reason']).toBe('exhausted');
    expect(typeof parkedHeaders['x-exception-message']).toBe('string');
    expect(Buffer.byteLength(parkedHeaders['x-exception-message'] as string)).toBeLessThan(8 * 1024);
  });

  it('declares a deleted error queue again and parks in it, after exactly maxAttempts calls', async () => {
    const { broker, queue } = suite;
    const result = await failAndPark(
      () => new Error('always'),
      {},
      async () => {
        await broker.channel.deleteQueue(`${queue}.error`); // an operator deletes it while the app runs
        await waitFor(async () => !(await broker.exists(`${queue}.error`)), 'the error queue gone');
      },
    );

    expect({ calls: result.calls, parked: result.parked.length, left: result.left }).toEqual({ calls: 2, parked: 1, left: 0 });
    expect(headersOf(result.parked[0])).toMatchObject({ 'x-parked-reason': 'exhausted', 'x-retry-attempts': 2 });
  });
});
