import { NonRetryableError, PublishError, RetryPublisher } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';

/**
 * Under a memory or disk alarm the broker blocks every connection that publishes, acks included. The
 * consumers must keep draining (their connection never publishes), and publishes must fail in bounded time. The
 * alarm is raised on a node of the test's own (the version under test), never on the broker others use.
 */
describe('a broker that blocks publishers', () => {
  let restore: (() => Promise<void>) | undefined; // also run after the test, should it time out mid-alarm
  afterEach(async () => {
    // Declared before the suite's cleanup, so it runs first: the apps close without the alarm.
    await restore?.();
    restore = undefined;
  });
  const suite = useSuite('e2e.blocked', { privateNode: true });

  /** Ready and unacknowledged messages of a queue, as the broker counts them. */
  async function messagesIn(queue: string): Promise<number | undefined> {
    const lines = (await suite.node!.ctl('list_queues', 'name', 'messages', '-q', '--no-table-headers')).split('\n');
    const line = lines.find((l) => l.startsWith(`${queue}\t`));
    return line === undefined ? undefined : Number(line.split('\t')[1]);
  }

  it('keeps consuming and acking while publishers are blocked; parks wait, bounded, and complete after', async () => {
    const { broker, queue } = suite;
    const node = suite.node!;
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const Handler = handlerFor({ queue, prefetch: 50 }, async (payload) => {
      await released;
      if ((payload as { n: number }).n % 10 === 0) throw new NonRetryableError('parked on purpose');
    });
    const app = (suite.app = await startApp([Handler], { ...TEST_OPTIONS, url: node.url, confirmTimeout: '500ms', publishTimeout: '1s' }));
    for (let n = 0; n < 40; n++) await broker.publish('', queue, { n });
    await waitFor(() => handlerOf(app, Handler).calls.length === 40, 'every handler started');

    restore = await node.raiseMemoryAlarm();
    let publishFailure: unknown;
    try {
      const startedAt = Date.now();
      const hang = new Promise((resolve) => setTimeout(() => resolve(new Error('still waiting after 5 s')), 5_000));
      publishFailure = await Promise.race([
        app
          .get(RetryPublisher)
          .publish('', queue, { n: 'during the alarm' })
          .catch((error: unknown) => error),
        hang,
      ]);
      expect(Date.now() - startedAt).toBeLessThan(3_000); // bounded by publishTimeout / confirmTimeout, never a hang
      release();
      // 36 handlers succeed: their acks go out on the consuming connection, which the alarm does not block.
      await waitFor(async () => (await messagesIn(queue)) === 4, 'the successes acked during the alarm (4 parks left unacked)', 10_000);
      expect(await broker.count(`${queue}.error`)).toBe(0); // the 4 parks wait for the alarm to end
    } finally {
      release();
      await restore();
      restore = undefined;
    }
    expect(publishFailure).toBeInstanceOf(PublishError);
    expect((publishFailure as Error).message).toMatch(/did not confirm it within 500 ms|write buffer|no connection/);
    // A park whose confirm timed out during the alarm may still have been written: at least once, so dedupe by id.
    const parked = await broker.take(`${queue}.error`, 4, 30_000);
    expect([...new Set(parked.map((m) => (JSON.parse(m.content.toString()) as { n: number }).n))].sort((a, b) => a - b)).toEqual([0, 10, 20, 30]);
    const numbered = () => handlerOf(app, Handler).calls.filter((c) => typeof (c.payload as { n: unknown }).n === 'number');
    expect(numbered()).toHaveLength(40); // no handler ran twice
    await waitFor(async () => (await broker.consumers(queue)) === 1 && (await broker.count(queue)) === 0, 'a drained queue');
  });

  it('app.close() during the alarm ends in bounded time, though the blocked connection answers no channel.open', async () => {
    const { broker, queue } = suite;
    const node = suite.node!;
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const Handler = handlerFor({ queue, prefetch: 10 }, async () => {
      await released;
      throw new NonRetryableError('parked on purpose');
    });
    const app = (suite.app = await startApp([Handler], {
      ...TEST_OPTIONS,
      url: node.url,
      confirmTimeout: '300ms',
      publishTimeout: '600ms',
      shutdownTimeout: '1s',
    }));
    for (let n = 0; n < 5; n++) await broker.publish('', queue, { n });
    await waitFor(() => handlerOf(app, Handler).calls.length === 5, 'every handler started');

    restore = await node.raiseMemoryAlarm();
    let closeMs: number | undefined;
    try {
      // A publish blocks the publishing connection; its confirm times out, and the channels opened after that (the
      // publisher's next, the parker's) get no answer while the alarm lasts.
      const publisher = app.get(RetryPublisher);
      for (let i = 0; i < 3; i++) await publisher.publish('', queue, { n: `during the alarm ${i}` }).catch(() => undefined);
      release(); // 5 parks, on the blocked connection
      await waitFor(() => handlerOf(app, Handler).calls.length >= 5, 'the parks under way');
      const startedAt = Date.now();
      const closing = app.close().then(() => Date.now() - startedAt);
      let timer: NodeJS.Timeout | undefined;
      closeMs = await Promise.race([closing, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), 20_000)))]);
      clearTimeout(timer);
      suite.app = undefined;
    } finally {
      release();
      await restore();
      restore = undefined;
    }
    // At most twice the shutdown timeout (1 s), the stop margin (2 s) and the channel close waits: never the alarm's length.
    expect({ closed: closeMs !== undefined, withinBound: (closeMs ?? Infinity) < 8_000 }).toEqual({ closed: true, withinBound: true });
    // Nothing lost: each of the 5 is back in the queue (unacked when the connections closed) or parked, or both.
    const total = async () => ((await broker.count(queue)) ?? 0) + ((await broker.count(`${queue}.error`)) ?? 0);
    await waitFor(async () => (await total()) >= 5, 'the 5 back in the queue or parked', 15_000);
    const [back, parked] = [await broker.drain(queue), await broker.drain(`${queue}.error`)];
    const numbered = [...back, ...parked].map((m) => (JSON.parse(m.content.toString()) as { n: unknown }).n).filter((n) => typeof n === 'number');
    expect([...new Set(numbered)].sort()).toEqual([0, 1, 2, 3, 4]);
  });
});
