import type { INestApplicationContext } from '@nestjs/common';
import { RetryEngine } from 'nestjs-amqp-retry';
import { handlerFor, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { usePartitionSuite } from '../support/partitions.js';
import { RecordingLogger } from '../support/recording-logger.js';

type Step = { key: string; seq: number };

const KEYS = 40;
const PER_KEY = 5;

describe('partitioned instances of two counts on a real broker (a rolling change of count)', () => {
  const suite = usePartitionSuite('e2e.parts.counts', 8);

  /** A handler of `count` partitions that records the key and sequence of every call. */
  function partitioned(count: number, seen: Step[]) {
    return handlerFor({ queue: suite.queue, prefetch: 50, partitions: { count, key: { header: 'x-key' }, heartbeat: '200ms' } }, (payload) => {
      seen.push(payload as Step);
    });
  }

  /** Per partition 0 .. total-1, how many of the running instances consume it (the partition runtimes, not movers). */
  const consumersInViews = (total: number) =>
    Array.from(
      { length: total },
      (_, i) =>
        suite.apps.filter((app: INestApplicationContext) =>
          app
            .get(RetryEngine)
            .partitions()[0]
            .partitions.some((p) => p.index === i && p.consuming),
        ).length,
    );

  async function publish(): Promise<void> {
    for (let seq = 0; seq < PER_KEY; seq++) {
      for (let k = 0; k < KEYS; k++) {
        suite.broker.channel.publish(suite.queue, 'any', Buffer.from(JSON.stringify({ key: `k${k}`, seq })), {
          headers: { 'x-key': `k${k}` },
          contentType: 'application/json',
          persistent: true,
        });
      }
    }
    await (suite.broker.channel as unknown as { waitForConfirms(): Promise<void> }).waitForConfirms();
  }

  /** Every key handled PER_KEY times per round published: the keys that stall say where. */
  async function everyKeyHandled(seen: Step[], rounds = 1): Promise<void> {
    const missing = () =>
      Array.from({ length: KEYS }, (_, k) => `k${k}`).filter((key) => seen.filter((s) => s.key === key).length < rounds * PER_KEY);
    await waitFor(() => missing().length === 0, `every key handled (still missing: ${missing().length} keys)`, 15_000).catch((error: Error) => {
      throw new Error(`${error.message}; keys not handled: ${missing().join(', ')}`);
    });
  }

  it('a larger count beside an instance of the smaller: each partition has exactly one active consumer, every key is handled', async () => {
    const seen: Step[] = [];
    suite.apps.push(await startApp([partitioned(4, seen)], TEST_OPTIONS));
    await waitFor(() => consumersInViews(4).join() === '1,1,1,1', 'the first instance consuming its 4 partitions', 5_000);
    // The new count declares p4 .. p7 and binds them to the hash exchange: only it knows they exist.
    suite.apps.push(await startApp([partitioned(8, seen)], TEST_OPTIONS));
    await waitFor(
      async () => {
        if (consumersInViews(8).join() !== '1,1,1,1,1,1,1,1') return false;
        for (let i = 0; i < 8; i++) if ((await suite.broker.consumers(`${suite.queue}.p${i}`)) !== 1) return false;
        return true;
      },
      'one consumer on each of the 8 partitions',
      10_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; instances consuming each partition: ${consumersInViews(8).join()}`);
    });
    // Both share the partitions both run; the ones only the new count runs are its own.
    const [small, large] = suite.apps.map((app) => app.get(RetryEngine).partitions()[0]);
    expect(small.partitions.filter((p) => p.consuming).length).toBeGreaterThan(0);
    expect(large.partitions.slice(4).every((p) => p.consuming)).toBe(true);
    await publish();
    await everyKeyHandled(seen);
    for (let i = 0; i < 8; i++) expect(await suite.broker.count(`${suite.queue}.p${i}`)).toBe(0);
  });

  it("what expires in a partition beyond an instance's count is parked in that partition, as expired, by the shared dead-letter consumer", async () => {
    const seen: Step[] = [];
    suite.apps.push(await startApp([partitioned(2, seen)], TEST_OPTIONS));
    await waitFor(() => consumersInViews(2).join() === '1,1', 'the first instance consuming its 2 partitions', 5_000);
    // An instance of 4 declares p2 and p3 (bound to the hash exchange, dead-lettering into the shared queue) and stops:
    // what hashes there now waits unconsumed, and expires. Only the instance of 2 consumes the dead-letter queue.
    const larger = await startApp([partitioned(4, seen)], TEST_OPTIONS);
    await waitFor(() => larger.get(RetryEngine).partitions()[0].partitions.length === 4, 'the instance of 4 started', 5_000);
    await larger.close();
    for (let k = 0; k < KEYS; k++) {
      suite.broker.channel.publish(suite.queue, 'any', Buffer.from(JSON.stringify({ key: `k${k}`, seq: 0 })), {
        headers: { 'x-key': `k${k}` },
        contentType: 'application/json',
        persistent: true,
        expiration: '200',
      });
    }
    await (suite.broker.channel as unknown as { waitForConfirms(): Promise<void> }).waitForConfirms();
    const parked = async () =>
      ((await suite.broker.count(`${suite.queue}.p2.error`)) ?? 0) + ((await suite.broker.count(`${suite.queue}.p3.error`)) ?? 0);
    await waitFor(async () => seen.length + (await parked()) === KEYS, 'every message handled in p0 or p1, or parked from p2 or p3', 15_000).catch(
      async (error: Error) => {
        throw new Error(
          `${error.message}; handled ${seen.length}, parked from p2/p3 ${await parked()}, in p0.error ${await suite.broker.count(`${suite.queue}.p0.error`)}`,
        );
      },
    );
    expect(seen.length).toBeGreaterThan(0);
    expect(await parked()).toBeGreaterThan(0);
    expect([await suite.broker.count(`${suite.queue}.p0.error`), await suite.broker.count(`${suite.queue}.p1.error`)]).toEqual([0, 0]);
    for (const partition of ['p2', 'p3']) {
      for (const message of await suite.broker.drain(`${suite.queue}.${partition}.error`)) {
        const headers = message.properties.headers as Record<string, unknown>;
        expect([headers['x-parked-reason'], headers['x-original-queue']]).toEqual(['expired', `${suite.queue}.${partition}`]);
      }
    }
  });

  it('a smaller count beside an instance of the larger: the partitions beyond it stay consumed, and nothing in them is lost', async () => {
    const seen: Step[] = [];
    suite.apps.push(await startApp([partitioned(8, seen)], TEST_OPTIONS));
    await waitFor(() => consumersInViews(8).every((n) => n === 1), 'the first instance consuming its 8 partitions', 5_000);
    // The smaller count cuts p4 .. p7 off the hash exchange and moves what reaches them; the larger still runs them.
    suite.apps.push(await startApp([partitioned(4, seen)], TEST_OPTIONS));
    await waitFor(() => consumersInViews(8).join() === '1,1,1,1,1,1,1,1', 'each of the 8 partitions consumed by one instance', 10_000).catch(
      (error: Error) => {
        throw new Error(`${error.message}; instances consuming each partition: ${consumersInViews(8).join()}`);
      },
    );
    // What the larger count does when it reconnects: it binds p4 .. p7 to the hash exchange again.
    for (let i = 4; i < 8; i++) await suite.broker.channel.bindQueue(`${suite.queue}.p${i}`, suite.queue, '1');
    await publish();
    await everyKeyHandled(seen, 1);
    // The larger count leaves: the smaller count's mover takes p4 .. p7 and moves what reaches them.
    await suite.apps.shift()!.close();
    for (let i = 4; i < 8; i++) await suite.broker.channel.bindQueue(`${suite.queue}.p${i}`, suite.queue, '1');
    await publish();
    await everyKeyHandled(seen, 2);
    for (let i = 0; i < 8; i++) expect(await suite.broker.count(`${suite.queue}.p${i}`)).toBe(0);
  });

  it('a retired partition deleted, then declared again by an instance of the larger count, is cut off and moved again', async () => {
    const seen: Step[] = [];
    const logger = new RecordingLogger();
    suite.apps.push(await startApp([partitioned(8, seen)], TEST_OPTIONS));
    await waitFor(() => consumersInViews(8).every((n) => n === 1), 'the first instance consuming its 8 partitions', 5_000);
    const smaller = await startApp([partitioned(4, seen)], TEST_OPTIONS);
    smaller.useLogger(logger);
    suite.apps.push(smaller);
    await waitFor(() => consumersInViews(4).join() === '1,1,1,1', 'the partitions of the smaller count consumed', 10_000);
    // The larger count leaves; the operator deletes an empty retired partition, as the start's warning says.
    await suite.apps.shift()!.close();
    const p5 = `${suite.queue}.p5`;
    await suite.broker.channel.deleteQueue(p5);
    await waitFor(() => logger.lines.some((line) => line.includes(`"${p5}" was deleted`)), 'the mover of p5 ended', 5_000);
    // An instance of the larger count starts (a rollback, a late old instance): it declares p5 again, bound to the hash exchange, and leaves.
    suite.apps.push(await startApp([partitioned(8, seen)], TEST_OPTIONS));
    smaller.useLogger(logger); // Nest's logger is one for the process: the start above set it again
    const foundAgain = /"[^"]*\.p5" beyond partitions\.count \(4\) was declared again/;
    await waitFor(() => logger.count(foundAgain) === 1, 'p5 found again by the smaller count', 15_000);
    await suite.apps.pop()!.close();
    await publish();
    await everyKeyHandled(seen);
    for (let i = 0; i < 8; i++) expect(await suite.broker.count(`${suite.queue}.p${i}`)).toBe(0);
  });
});
