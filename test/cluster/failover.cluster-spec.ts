import { type INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { NonRetryableError, planDelayTopology, RetryPublisher, type RetryContext } from 'nestjs-amqp-retry';
import { handlerFor, startApp } from '../support/app.js';
import { AMQP_URL, TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { CLUSTER_URLS, killNode, leaderOf, type Node, NODES, nodeUrl, runningNodes, startNode } from './cluster-control.js';
import { RecordingLogger } from '../support/recording-logger.js';

const N = Number(process.env.CLUSTER_N ?? 5000);
const THROUGHPUT_N = Number(process.env.CLUSTER_THROUGHPUT_N ?? Math.min(N, 2000));
const PUBLISH_SECONDS = 10; // the ids are published at N / 10 per second, so that the kill lands mid-run
const KILL_AT = 0.4; // of the ids published
const DOWN_MS = 8_000; // the node stays down longer than the dead-letter worker's confirm timeout (5 s)
const DELAY_MS = 1_500;

type Kind = 'ok' | 'flaky' | 'exhausted' | 'non-retryable';
/** 2% always fail (parked exhausted), 1% are refused (parked non-retryable), 10% fail twice then pass, 5% delayed. */
const kindOf = (id: number): Kind => (id % 50 === 0 ? 'exhausted' : id % 97 === 5 ? 'non-retryable' : id % 10 === 1 ? 'flaky' : 'ok');
const isDelayed = (id: number) => id % 20 === 3;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Publishes every id through the library at `perSecond`, `inFlight` at a time; a publish that fails is counted and
 * tried again (what an application would do), so that an id is never given up.
 */
class PacedPublisher {
  published = 0;
  readonly failures: string[] = [];

  constructor(
    private readonly publisher: RetryPublisher,
    private readonly queue: string,
  ) {}

  async run(ids: number[], perSecond: number, inFlight: number, delayOf: (id: number) => number | undefined): Promise<void> {
    const started = Date.now();
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < ids.length; i = next++) {
        const due = started + (i * 1_000) / perSecond;
        if (due > Date.now()) await sleep(due - Date.now());
        const delay = delayOf(ids[i]);
        for (;;) {
          try {
            await this.publisher.publish('', this.queue, { id: ids[i] }, delay === undefined ? {} : { delay });
            break;
          } catch (error) {
            this.failures.push((error as Error).message);
            await sleep(250);
          }
        }
        this.published++;
      }
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
  }
}

/** Connects to the first running node, for inspection and clean-up from outside the library. */
async function anyNode(except?: Node): Promise<TestBroker> {
  const node = (await runningNodes()).find((n) => n !== except);
  if (!node) throw new Error('no cluster node runs');
  return TestBroker.connect(nodeUrl(node));
}

const ms = (value: number | undefined) => (value === undefined ? 'n/a' : `${Math.round(value)} ms`);

describe(`on a 3-node RabbitMQ cluster (scripts/cluster.sh)`, () => {
  const apps: INestApplicationContext[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    const running = await runningNodes();
    if (running.length !== 3) throw new Error(`the cluster runs ${running.length} of 3 nodes: start it with scripts/cluster.sh start`);
  });

  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    for (const app of apps) await app.close().catch(() => undefined);
    for (const node of NODES) if (!(await runningNodes()).includes(node)) await startNode(node).catch(() => undefined);
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
    expect(unhandled).toEqual([]);
  });

  it(`throughput: ${THROUGHPUT_N} messages through a quorum queue on the cluster and on one node`, async () => {
    const rows: string[] = [];
    const rates: number[] = [];
    for (const [where, urls] of [
      ['cluster of 3 (quorum queue, 3 replicas)', CLUSTER_URLS],
      ['one node (quorum queue, 1 replica)', [AMQP_URL]],
    ] as const) {
      const queue = uniqueName('cluster.throughput');
      cleanups.push(async () => {
        const broker = urls.length > 1 ? await anyNode() : await TestBroker.connect(urls[0]);
        await broker.deleteRetryTopology(queue);
        await broker.close();
      });
      const seen = new Set<number>();
      const Handler = handlerFor({ queue }, (payload) => void seen.add((payload as { id: number }).id));
      const app = await startApp([Handler], { urls: [...urls], queueType: 'quorum', delayedDelivery: false });
      apps.push(app);
      const ids = Array.from({ length: THROUGHPUT_N }, (_, id) => id);
      const started = Date.now();
      await new PacedPublisher(app.get(RetryPublisher), queue).run(ids, 1_000_000, 64, () => undefined);
      await waitFor(() => seen.size === THROUGHPUT_N, `${THROUGHPUT_N} messages handled on the ${where}`, 120_000);
      const rate = THROUGHPUT_N / ((Date.now() - started) / 1_000);
      rates.push(rate);
      rows.push(`| ${where} | ${THROUGHPUT_N} | ${Math.round(rate)} msgs/s |`);
      await app.close();
    }
    process.stdout.write(
      `\nThroughput (published and handled, confirmed, persistent):\n| broker | messages | rate |\n|---|---|---|\n${rows.join('\n')}\n\n`,
    );
    expect(rates.every((rate) => rate > 0)).toBe(true);
  });

  it(`quorum queues: ${N} ids through retries, delays and the SIGKILL of the node leading the queue: every id accounted for, none lost`, async () => {
    const started = Date.now();
    const queue = uniqueName('cluster.q');
    const classicQueue = uniqueName('cluster.classic');
    const prefix = uniqueName('cluster.delay');
    cleanups.push(async () => {
      const broker = await anyNode();
      await broker.deleteRetryTopology(queue, { queues: [classicQueue] });
      await broker.deleteDelayLadder(prefix);
      await broker.close();
    });

    const handled = new Map<number, number>();
    const handledAt: number[] = [];
    const Handler = handlerFor({ queue, delays: ['200ms', '1s'], maxAttempts: 4 }, (payload: unknown, context: RetryContext) => {
      const { id } = payload as { id: number };
      const kind = kindOf(id);
      if (kind === 'exhausted') throw new Error(`id ${id} always fails`);
      if (kind === 'non-retryable') throw new NonRetryableError(`id ${id} is refused`);
      if (kind === 'flaky' && context.attempt <= 2) throw new Error(`id ${id} fails on attempt ${context.attempt}`);
      handled.set(id, (handled.get(id) ?? 0) + 1);
      handledAt.push(Date.now());
    });
    const app = await startApp([Handler], {
      urls: CLUSTER_URLS,
      queueType: 'quorum',
      delayedDelivery: { prefix }, // a quorum ladder: the module's queue type
      reconnect: { initialDelay: '100ms', maxDelay: '1s' },
      connectionName: `cluster-${randomUUID()}`,
    });
    apps.push(app);
    const logger = new RecordingLogger();
    app.useLogger(logger);
    const publisher = app.get(RetryPublisher);

    // The node to kill leads the business queue; a classic queue lives on it too, to show what a user gets there.
    const leader = await leaderOf(queue);
    const onLeader = await TestBroker.connect(nodeUrl(leader));
    await onLeader.channel.assertQueue(classicQueue, { durable: true, arguments: { 'x-queue-type': 'classic' } });
    await onLeader.close();

    const ids = Array.from({ length: N }, (_, id) => id);
    const paced = new PacedPublisher(publisher, queue);
    const publishing = paced.run(ids, N / PUBLISH_SECONDS, 32, (id) => (isDelayed(id) ? DELAY_MS : undefined));
    await waitFor(() => paced.published >= KILL_AT * N, `${KILL_AT * N} ids published`, 120_000);
    const handledBeforeKill = handled.size;
    const killAt = Date.now(); // the script takes about a second; the node dies within the first 100 ms of it
    await killNode(leader);
    const newLeader = await waitFor(async () => leaderOf(queue).then((node) => node !== leader && node), 'a new leader', 30_000);

    // Classic queue on the lost node, while it is down. Through the library (mandatory, confirmed): an error.
    const classicByLibrary = await publisher.publish('', classicQueue, { probe: 'library' }).then(
      () => 'confirmed',
      (error: Error) => error.message,
    );
    // Through amqplib with confirms, on a surviving node: without mandatory confirmed (and dropped), with it returned.
    const raw = await anyNode(leader);
    const returned: string[] = [];
    raw.channel.on('return', (message: { content: Buffer }) => returned.push(message.content.toString()));
    await raw.publish('', classicQueue, { probe: 'plain' });
    await raw.publish('', classicQueue, { probe: 'mandatory' }, { mandatory: true });
    await raw.close();

    await sleep(Math.max(0, killAt + DOWN_MS - Date.now()));
    await startNode(leader);
    const restartedAt = Date.now();
    await publishing;

    // Every id handled or parked; parked copies are taken out of the error queue as they come.
    const parked = new Map<number, string[]>();
    let classicAfterRestart: number | undefined;
    const inspector = await anyNode();
    // The handler's error queue, and the delay ladder's (a due message the forwarder could not deliver).
    const takeParked = async () => {
      for (const errorQueue of [`${queue}.error`, planDelayTopology(prefix, 'quorum').errorQueue]) {
        for (const m of await inspector.drain(errorQueue)) {
          const { id } = JSON.parse(m.content.toString()) as { id: number };
          const where = errorQueue === `${queue}.error` ? '' : ' (delay ladder)';
          parked.set(id, [...(parked.get(id) ?? []), `${String(m.properties.headers?.['x-parked-reason'])}${where}`]);
        }
      }
    };
    /** Messages waiting anywhere in the delay ladder: 0 means a delayed id that is missing will not come. */
    const ladderHolds = async () => {
      let sum = 0;
      for (const { name } of planDelayTopology(prefix, 'quorum').queues) sum += (await inspector.count(name)) ?? 0;
      return sum;
    };
    let leftInLadder: number | undefined;
    try {
      // Until every id is accounted for, or nothing has moved for 20 s with every queue on the way empty.
      let accounted = 0;
      let movedAt = Date.now();
      await waitFor(
        async () => {
          await takeParked();
          const now = ids.filter((id) => handled.has(id) || parked.has(id)).length;
          if (now !== accounted) [accounted, movedAt] = [now, Date.now()];
          if (accounted === N) return (await inspector.count(queue)) === 0;
          return Date.now() - movedAt > 20_000 && (await inspector.count(queue)) === 0 && (await ladderHolds()) === 0;
        },
        'every id handled or parked',
        180_000,
      ).catch(() => undefined); // the accounting below names what is missing
      await sleep(2_000); // late duplicates (redeliveries, dead letters re-sent) have time to show up in the counts
      await takeParked();
      leftInLadder = await ladderHolds();
      classicAfterRestart = await inspector.count(classicQueue);
    } finally {
      await inspector.close();
    }

    const lost = ids.filter((id) => !handled.has(id) && !parked.has(id));
    // Delayed ids wait in the delay ladder, quorum queues (the module's queue type) replicated on every node.
    const lostUndelayed = lost.filter((id) => !isDelayed(id));
    const lostDelayed = lost.filter(isDelayed);
    const shouldPark = ids.filter((id) => kindOf(id) === 'exhausted' || kindOf(id) === 'non-retryable');
    const wronglyParked = ids.filter((id) => parked.has(id) && !shouldPark.includes(id));
    const wronglyHandled = shouldPark.filter((id) => handled.has(id));
    const wrongReason = shouldPark.filter((id) => parked.get(id)?.some((reason) => reason !== kindOf(id)));
    const duplicates = [...handled.values()].reduce((sum, count) => sum + count - 1, 0);
    const parkedTwice = [...parked.values()].reduce((sum, reasons) => sum + reasons.length - 1, 0);
    const reconnects = logger.matching(/^log Reconnected to RabbitMQ at /);
    const reconnectMs = reconnects.map(({ line }) => Number(/after (\d+) ms/.exec(line)?.[1]));
    const resumedAt = Math.max(killAt, ...reconnects.map(({ at }) => at));
    const firstHandledAfterFailover = handledAt.find((at) => at > resumedAt);
    const failoverMs = firstHandledAfterFailover === undefined ? undefined : firstHandledAfterFailover - killAt;
    const elapsed = (Date.now() - started) / 1_000;

    const table = [
      '| ids | handled | parked | lost | handled twice or more (extra calls) | parked twice | wrongly parked | killed | new leader | consumer/publisher reconnect | kill to first handled after failover | publishes failed and retried | time |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
      `| ${N} | ${handled.size} | ${parked.size} | ${lost.length} | ${duplicates} | ${parkedTwice} | ${wronglyParked.length} | ${leader} (leader) | ${newLeader} | ${reconnectMs.map(ms).join(', ') || 'none'} | ${ms(failoverMs)} | ${paced.failures.length} | ${elapsed.toFixed(1)} s |`,
    ].join('\n');
    if (process.env.CLUSTER_LOG) {
      const { writeFileSync } = await import('node:fs');
      const lines = logger.entries.map(({ at, line }) => `${((at - killAt) / 1000).toFixed(3)} ${line}`);
      const calls = handledAt.filter((at) => at > killAt - 2_000 && at < killAt + 30_000).map((at) => `${((at - killAt) / 1000).toFixed(3)} handled`);
      writeFileSync(process.env.CLUSTER_LOG, [...lines, ...calls, `lost ${lost.join(',')}`].sort().join('\n'));
    }
    const wrongParks = wronglyParked.map((id) => `${id}: ${parked.get(id)?.join(', ')}`);
    process.stdout.write(
      `\nCluster failover (N=${N}, node down ${((restartedAt - killAt) / 1000).toFixed(1)} s):\n${table}\n` +
        `Classic queue on the killed node: library publish -> ${classicByLibrary}; amqplib without mandatory -> confirmed, ` +
        `${classicAfterRestart ?? '?'} message(s) in the queue after the restart; with mandatory -> ${returned.length} returned\n` +
        `Wrongly parked: ${wrongParks.join('; ') || 'none'}; lost: ${lost.join(', ') || 'none'} (${lostDelayed.length} of ${ids.filter(isDelayed).length} delayed ids, ${lostUndelayed.length} others); messages left in the delay ladder: ${leftInLadder}\n` +
        `Failed publishes (first 3 kinds): ${[...new Set(paced.failures.map((f) => f.replace(/\d+/g, '#')))].slice(0, 3).join(' | ') || 'none'}\n\n`,
    );

    expect(handledBeforeKill).toBeLessThan(N); // the kill came mid-run
    expect(lostUndelayed).toEqual([]);
    expect(lostDelayed).toEqual([]);
    expect(leftInLadder).toBe(0);
    expect(wronglyParked).toEqual([]);
    expect(wronglyHandled).toEqual([]);
    expect(wrongReason).toEqual([]);
    expect(parked.size).toBe(shouldPark.length);
    expect(failoverMs).toBeLessThan(30_000);
    expect(classicByLibrary).toMatch(/PublishError|failed|returned|no queue|unroutable/i);
    expect(returned).toEqual([JSON.stringify({ probe: 'mandatory' })]);
    expect(classicAfterRestart).toBe(0); // the plain publish was confirmed, yet it is gone
  });
});
