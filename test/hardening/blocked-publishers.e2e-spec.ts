import type { INestApplicationContext } from '@nestjs/common';
import { NonRetryableError, PublishError, RetryPublisher } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { PrivateBroker } from '../support/private-broker.js';

/**
 * Finding 9: under a memory or disk alarm the broker blocks every connection that publishes, acks included. The
 * consumers must keep draining (their connection never publishes), and publishes must fail in bounded time. The
 * alarm is raised on a node of the test's own (the version under test), never on the broker others use.
 */
describe('a broker that blocks publishers', () => {
  let node: PrivateBroker;
  let broker: TestBroker;
  let queue: string;
  let app: INestApplicationContext | undefined;
  let restore: (() => Promise<void>) | undefined; // also run from afterEach, should the test time out mid-alarm

  /** Ready and unacknowledged messages of a queue, as the broker counts them. */
  async function messagesIn(queue: string): Promise<number | undefined> {
    const line = (await node.ctl('list_queues', 'name', 'messages', '-q', '--no-table-headers')).split('\n').find((l) => l.startsWith(`${queue}\t`));
    return line === undefined ? undefined : Number(line.split('\t')[1]);
  }

  beforeAll(async () => {
    node = await PrivateBroker.start();
    broker = await TestBroker.connect(node.url);
  }, 600_000);
  afterAll(async () => {
    await broker?.close();
    await node?.stop();
  }, 120_000);
  beforeEach(() => {
    queue = uniqueName('e2e.blocked');
  });
  afterEach(async () => {
    await restore?.();
    restore = undefined;
    await app?.close();
    app = undefined;
    await broker.deleteRetryTopology(queue);
  });

  it('keeps consuming and acking while publishers are blocked; parks wait, bounded, and complete after', async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const Handler = handlerFor({ queue, prefetch: 50 }, async (payload) => {
      await released;
      if ((payload as { n: number }).n % 10 === 0) throw new NonRetryableError('parked on purpose');
    });
    app = await startApp([Handler], { ...TEST_OPTIONS, url: node.url, confirmTimeout: '500ms', publishTimeout: '1s' });
    for (let n = 0; n < 40; n++) await broker.publish('', queue, { n });
    await waitFor(() => handlerOf(app!, Handler).calls.length === 40, 'every handler started');

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
    const numbered = () => handlerOf(app!, Handler).calls.filter((c) => typeof (c.payload as { n: unknown }).n === 'number');
    expect(numbered()).toHaveLength(40); // no handler ran twice
    await waitFor(async () => (await broker.consumers(queue)) === 1 && (await broker.count(queue)) === 0, 'a drained queue');
  });
});
