import { type ChildProcess, fork } from 'node:child_process';
import amqp from 'amqplib';
import { AMQP_URL, TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { deletePartitionedTopology, requireHashExchange } from '../support/partitions.js';
import { buildLibrary, stopWith } from './consumer-process.js';

/**
 * Partitions under process loss, on the broker AMQP_URL names (it kills only its own child processes): PARTS_N messages
 * (default 4,000 inside npm test; `npm run test:partitions` runs 20,000) over PARTS_KEYS keys (500) into PARTS_COUNT partitions (8), three instances, handlers of 5 ms
 * that fail a tenth of first attempts; one instance SIGKILLed a third of the way, a fourth started half way. `npm run test:partitions`; CI may run it smaller (PARTS_N=4000).
 */
const N = Number(process.env.PARTS_N ?? 4_000); // npm run test:partitions runs 20,000
const KEYS = Number(process.env.PARTS_KEYS ?? 500);
const COUNT = Number(process.env.PARTS_COUNT ?? 8);
/** The default heartbeat (1 s): an instance is gone after 3 missed, noticed at the next; plus a margin for 2 busy cores. */
const HANDOVER_BOUND_MS = 4 * 1_000 + 2_000;

interface Result {
  key: string;
  seq: number;
  attempt: number;
  pid: number;
  partition: string;
  at: number;
}

interface Instance {
  child: ChildProcess;
  pid: number;
  consuming: number[];
}

describe(`partitions: ${N} messages over ${KEYS} keys in ${COUNT} partitions, 3 instances, one SIGKILLed, a fourth joining`, () => {
  const queue = uniqueName('chaos.parts');
  const results = `${queue}.results`;
  let broker: TestBroker;
  const instances: Instance[] = [];

  beforeAll(async () => {
    await requireHashExchange();
    await buildLibrary();
    broker = await TestBroker.connect();
    await broker.declareQueue(results);
  }, 180_000);

  afterAll(async () => {
    for (const { child } of instances) if (child.exitCode === null && child.signalCode === null) await stopWith(child, 'SIGTERM');
    await deletePartitionedTopology(broker, queue, COUNT);
    await broker.channel.deleteQueue(results);
    await broker.close();
  }, 120_000);

  function start(): Promise<Instance> {
    const output = process.env.CHAOS_VERBOSE ? 'inherit' : 'ignore';
    const child = fork(new URL('./partition-consumer.mjs', import.meta.url).pathname, [], {
      env: { ...process.env, PARTS_URL: AMQP_URL, PARTS_QUEUE: queue, PARTS_RESULTS: results, PARTS_COUNT: String(COUNT) },
      stdio: ['ignore', output, output, 'ipc'],
    });
    const instance: Instance = { child, pid: child.pid as number, consuming: [] };
    instances.push(instance);
    child.on('message', (m: { consuming: number[] }) => (instance.consuming = m.consuming));
    return new Promise((resolve, reject) => {
      child.once('message', () => resolve(instance));
      child.once('exit', (code) => reject(new Error(`instance exited with ${code} before it was ready`)));
    });
  }

  const alive = () => instances.filter((i) => i.child.exitCode === null && i.child.signalCode === null);
  /** Every partition consumed by exactly one live instance. */
  const settled = () => {
    const owners = alive().flatMap((i) => i.consuming);
    return owners.length === COUNT && new Set(owners).size === COUNT;
  };

  it("keeps every key in order, loses nothing, hands a killed instance's partitions over within the bound, and shares with a joiner", async () => {
    for (let i = 0; i < 3; i++) await start();
    await waitFor(() => settled() && alive().every((i) => i.consuming.length > 0), 'the partitions spread over the three instances', 20_000);
    const spread = alive()
      .map((i) => i.consuming.length)
      .sort();
    expect(spread).toEqual(COUNT === 8 ? [2, 3, 3] : spread);

    const seen: Result[] = [];
    const consumer = await amqp.connect(AMQP_URL);
    const channel = await consumer.createChannel();
    await channel.prefetch(1000);
    await channel.consume(results, (m) => {
      if (m === null) return;
      seen.push(JSON.parse(m.content.toString()) as Result);
      channel.ack(m);
    });

    // The messages go out in two waves: the kill and the join happen between them, so the joiner finds work (the
    // instances handle a wave faster than this process reads the results: the progress is read from the queues).
    const started = Date.now();
    const publisher = await amqp.connect(AMQP_URL);
    const pub = await publisher.createConfirmChannel();
    const wave = async (from: number, to: number) => {
      for (let n = from; n < to; n++) {
        const key = `k${n % KEYS}`;
        const seq = Math.floor(n / KEYS);
        pub.publish(queue, '', Buffer.from(JSON.stringify({ key, seq })), {
          headers: { 'x-key': key },
          contentType: 'application/json',
          persistent: true,
        });
        if (n % 1000 === 999) await pub.waitForConfirms();
      }
      await pub.waitForConfirms();
    };
    const remaining = async () => {
      let sum = 0;
      for (let p = 0; p < COUNT; p++) sum += (await broker.count(`${queue}.p${p}`)) ?? 0;
      return sum;
    };
    const half = Math.floor(N / KEYS / 2) * KEYS;
    await wave(0, half);

    // A third of the first wave handled: SIGKILL the busiest instance; a fourth one joins at once.
    await waitFor(async () => (await remaining()) <= (2 * half) / 3, 'a third handled', 300_000);
    const victim = alive().sort((a, b) => b.consuming.length - a.consuming.length)[0];
    const orphaned = [...victim.consuming];
    const killedAt = Date.now();
    await stopWith(victim.child, 'SIGKILL');
    const joiner = await start();
    const joinedAt = Date.now();
    await waitFor(() => joiner.consuming.length > 0 && settled(), 'the joiner taking a share', 20_000);
    const rebalance = Date.now() - joinedAt;
    await wave(half, N);
    await publisher.close();

    const firstAfterKill = (p: number) => seen.filter((r) => r.partition === `${queue}.p${p}` && r.pid !== victim.pid && r.at > killedAt);
    await waitFor(() => orphaned.every((p) => firstAfterKill(p).length > 0), 'the orphaned partitions running again', 60_000);
    const handover = Math.max(...orphaned.map((p) => Math.min(...firstAfterKill(p).map((r) => r.at)) - killedAt));

    const distinct = () => new Set(seen.map((r) => `${r.key}#${r.seq}`)).size;
    await waitFor(() => distinct() === N, 'every message handled', 600_000);
    const elapsed = Date.now() - started;
    await consumer.close();

    // Per key: the results in the order they were handled, a repeat of the previous one allowed (a result published
    // by the killed instance just before its ack was lost, handled again by the next owner).
    const byKey = new Map<string, number[]>();
    for (const r of seen) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r.seq]);
    let violations = 0;
    let duplicates = 0;
    for (const seqs of byKey.values()) {
      let last = -1;
      for (const seq of seqs) {
        if (seq === last) duplicates++;
        else if (seq !== last + 1) violations++;
        last = Math.max(last, seq);
      }
    }
    const joinerShare = seen.filter((r) => r.pid === joiner.pid).length;
    const afterJoin = seen.filter((r) => r.at > joinedAt + rebalance).length;
    process.stdout.write(
      `partitions: N=${N} keys=${KEYS} partitions=${COUNT}: ${(N / (elapsed / 1000)).toFixed(0)} msg/s, order violations ${violations}, ` +
        `lost ${N - distinct()}, duplicates ${duplicates}, hand-over after SIGKILL ${handover} ms (bound ${HANDOVER_BOUND_MS}), ` +
        `joiner took ${joiner.consuming.length} partitions in ${rebalance} ms and handled ${joinerShare} of the ${afterJoin} handled after that\n`,
    );
    expect(violations).toBe(0);
    expect(N - distinct()).toBe(0);
    expect(handover).toBeLessThan(HANDOVER_BOUND_MS);
    expect(joiner.consuming.length).toBeGreaterThanOrEqual(Math.floor(COUNT / 4));
    expect(joinerShare).toBeGreaterThan(0);
  }, 900_000);
});
