import type { INestApplicationContext } from '@nestjs/common';
import { RetryEngine } from 'nestjs-amqp-retry';
import { handlerFor, startApp, TEST_OPTIONS } from '../support/app.js';
import { AMQP_URL, uniqueName, waitFor } from '../support/broker.js';
import { closeConnections, ctl } from '../support/broker-control.js';
import { usePartitionSuite } from '../support/partitions.js';
import { RecordingLogger } from '../support/recording-logger.js';

const HEARTBEAT_MS = 200;

describe("the members' view when its exchange or its queues are deleted", () => {
  const suite = usePartitionSuite('e2e.parts.members', 4);

  async function twoInstances(logger?: RecordingLogger, options: Parameters<typeof startApp>[1] = TEST_OPTIONS) {
    const make = () =>
      handlerFor({ queue: suite.queue, partitions: { count: 4, key: { header: 'x-key' }, heartbeat: `${HEARTBEAT_MS}ms` } }, () => undefined);
    suite.apps.push(await startApp([make()], options), await startApp([make()], options));
    if (logger) suite.apps[0].useLogger(logger);
    const views = () => suite.apps.map((app) => app.get(RetryEngine).partitions()[0]);
    const consumedBy = () => views().map((v) => v.partitions.filter((p) => p.consuming).length);
    await waitFor(() => consumedBy().join() === '2,2', 'two partitions consumed by each instance', 10_000);
    return { views, consumedBy };
  }

  /** For `ms`, every 20 ms: each instance hears both and consumes two partitions (none took the other's share). */
  async function staysBalanced(run: Awaited<ReturnType<typeof twoInstances>>, ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      expect(run.views().map((v) => v.members.length)).toEqual([2, 2]);
      expect(run.consumedBy()).toEqual([2, 2]);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** The exclusive queues bound to the members' exchange, as the broker lists them. */
  async function memberQueues(): Promise<string[]> {
    const lines = (await ctl('list_bindings', 'source_name', 'destination_name', '-q', '--no-table-headers')).split('\n');
    return lines
      .map((line) => line.split('\t'))
      .flatMap(([source, destination]) => (source === `${suite.queue}.partitions.members` ? [destination] : []));
  }

  it('keeps its view and its share when the exchange is deleted, declares it again, and hears the others again', async () => {
    const logger = new RecordingLogger();
    const run = await twoInstances(logger);
    await suite.broker.channel.deleteExchange(`${suite.queue}.partitions.members`);
    // Three missed heartbeats would have dropped the other member; five pass with the view unchanged.
    await staysBalanced(run, HEARTBEAT_MS * 5);
    await waitFor(async () => (await memberQueues()).length === 2, 'both listening on the exchange again', 5_000);
    expect(logger.count(/does not hear its own announcements/)).toBe(2); // once per instance, not per heartbeat
    await waitFor(() => logger.lines.some((line) => line.includes('hears the members again')), 'the recovery logged', 5_000);
  });

  it("hears no announcement the broker did not validate as the application's user: a forged member gets no partition", async () => {
    const logger = new RecordingLogger();
    const run = await twoInstances(logger);
    const forged = Buffer.from(JSON.stringify({ id: 'phantom', count: 4 }));
    const until = Date.now() + HEARTBEAT_MS * 5;
    while (Date.now() < until) {
      suite.broker.channel.publish(`${suite.queue}.partitions.members`, '', forged);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(run.views().map((v) => v.members.length)).toEqual([2, 2]);
      expect(run.consumedBy()).toEqual([2, 2]);
    }
    expect(logger.count(/ignored an announcement with no broker-validated user/)).toBe(2); // once per instance, not per message
  });

  it('announces as the user of the node it failed over to: with a first URL of another user, both still hear each other', async () => {
    // The first URL's node is down: the connections open on the second, as guest, and the broker takes only that userId.
    const urls = ['amqp://alice:secret@127.0.0.1:1', AMQP_URL];
    const run = await twoInstances(undefined, { ...TEST_OPTIONS, url: undefined, urls });
    expect(run.consumedBy()).toEqual([2, 2]);
  });

  it("listens again when the broker cancels its members' queue, and the view never loses the other", async () => {
    const run = await twoInstances();
    const [first] = await memberQueues();
    await ctl('delete_queue', first);
    await staysBalanced(run, HEARTBEAT_MS * 5);
    await waitFor(async () => (await memberQueues()).length === 2 && !(await memberQueues()).includes(first), 'a new queue bound', 5_000);
    // A member that stops is still heard: the other takes every partition at once.
    await suite.apps.shift()!.close();
    await waitFor(() => run.consumedBy().join() === '4', 'the survivor owns all', 5_000);
  });

  it('keeps every member in its view through a reconnection longer than 3 heartbeats, and drops none on the first it hears', async () => {
    suite.uses(6);
    const connectionName = uniqueName('e2e-parts-reconnecting');
    const make = () =>
      handlerFor({ queue: suite.queue, partitions: { count: 6, key: { header: 'x-key' }, heartbeat: `${HEARTBEAT_MS}ms` } }, () => undefined);
    suite.apps.push(
      await startApp([make()], { ...TEST_OPTIONS, connectionName, reconnect: { initialDelay: '1500ms' } }), // an outage of 7 heartbeats
      await startApp([make()], TEST_OPTIONS),
      await startApp([make()], TEST_OPTIONS),
    );
    const view = (i: number) => suite.apps[i].get(RetryEngine).partitions()[0];
    await waitFor(() => [0, 1, 2].every((i) => view(i).members.length === 3), 'three members heard by each', 10_000);
    const seen = new Set<number>();
    let watching = true;
    const watch = (async () => {
      while (watching) {
        seen.add(view(0).members.length);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    expect(await closeConnections(connectionName)).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_MS * 4)); // the others count it gone meanwhile
    const consumedBy = () => [0, 1, 2].map((i) => view(i).partitions.filter((p) => p.consuming).length).join();
    await waitFor(() => consumedBy() === '2,2,2', 'the partitions spread over the three again', 20_000);
    await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_MS * 8));
    watching = false;
    await watch;
    expect([...seen]).toEqual([3]);
  });

  it('a joining instance takes its share before the owners let go: no partition goes unconsumed while it starts', async () => {
    const make = () => handlerFor({ queue: suite.queue, partitions: { count: 4, key: { header: 'x-key' }, heartbeat: '1s' } }, () => undefined);
    suite.apps.push(await startApp([make()], TEST_OPTIONS));
    const view = (app: INestApplicationContext) => app.get(RetryEngine).partitions()[0];
    await waitFor(() => view(suite.apps[0]).partitions.every((p) => p.consuming), 'the first instance consuming all 4', 10_000);
    // Every 10 ms, for each partition, since when no instance has consumed it (subscribed as its owner).
    const apps = [suite.apps[0]];
    const unconsumedSince = new Map<number, number>();
    let longest = 0;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const now = Date.now();
        for (let i = 0; i < 4; i++) {
          const consumed = apps.some((app) => view(app).partitions[i].consuming);
          if (consumed) unconsumedSince.delete(i);
          else if (!unconsumedSince.has(i)) unconsumedSince.set(i, now);
          longest = Math.max(longest, now - (unconsumedSince.get(i) ?? now));
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const joining = await startApp([make()], TEST_OPTIONS);
    suite.apps.push(joining);
    apps.push(joining);
    const consumedBy = () => apps.map((app) => view(app).partitions.filter((p) => p.consuming).length).join();
    await waitFor(() => consumedBy() === '2,2', 'two partitions consumed by each instance', 10_000);
    watching = false;
    await watch;
    // Without waiting for the joiner, its share went unconsumed for a heartbeat and a half (1.5 s here).
    expect(longest).toBeLessThan(250);
  });
});
