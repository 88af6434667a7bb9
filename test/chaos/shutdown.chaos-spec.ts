import type { ChildProcess } from 'node:child_process';
import { AMQP_URL, TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { buildLibrary, startConsumer, stopWith } from './consumer-process.js';

const MESSAGES = 60;
const WORK_MS = 400;

const ids = (messages: { content: Buffer }[]) => messages.map((m) => (JSON.parse(m.content.toString()) as { id: number }).id).sort((a, b) => a - b);

describe('SIGTERM with enableShutdownHooks: a graceful stop of the consuming process', () => {
  const queue = uniqueName('shutdown.work');
  const results = `${queue}.results`;
  const started = `${queue}.started`;
  let broker: TestBroker;
  let child: ChildProcess | undefined;

  beforeAll(buildLibrary, 150_000);
  beforeAll(async () => {
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) await stopWith(child, 'SIGKILL');
    await broker.deleteRetryTopology(queue, { queues: [results, started] });
    await broker.close();
  });

  it('finishes and acks the handlers in flight, and leaves every message it did not start in the queue', async () => {
    await broker.declareQueue(results);
    await broker.declareQueue(started);
    const env = {
      CHAOS_URL: AMQP_URL,
      CHAOS_QUEUE: queue,
      CHAOS_RESULTS: results,
      CHAOS_STARTED: started,
      CHAOS_FAILURE_RATE: '0',
      CHAOS_WORK_MS: String(WORK_MS),
    };
    child = await startConsumer(env);
    for (let id = 0; id < MESSAGES; id++) await broker.publish('', queue, { id });
    await waitFor(async () => ((await broker.count(started)) ?? 0) >= 20, 'a full prefetch window of handlers in flight');

    const stopping = Date.now();
    const exit = await stopWith(child, 'SIGTERM');
    const stoppedAfter = Date.now() - stopping;

    const startedIds = ids(await broker.drain(started));
    const finishedIds = ids(await broker.drain(results));
    expect(exit.code === 0 || exit.signal === 'SIGTERM').toBe(true);
    expect(stoppedAfter).toBeLessThan(WORK_MS * 2 + 2_000); // it waited for the handlers, not for the backlog
    expect(finishedIds).toEqual(startedIds); // every handler that started finished before the process ended
    expect(startedIds.length).toBeGreaterThanOrEqual(20);
    expect(startedIds.length).toBeLessThan(MESSAGES);
    const remaining = await broker.drain(queue); // acked ones are gone; the rest is back or never left
    expect(ids(remaining)).toEqual(Array.from({ length: MESSAGES }, (_, id) => id).filter((id) => !startedIds.includes(id)));
  }, 60_000);
});
