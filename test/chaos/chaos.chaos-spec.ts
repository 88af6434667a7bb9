import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type amqp from 'amqplib';
import { Redis } from 'ioredis';
import { TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { PrivateBroker } from '../support/private-broker.js';
import { buildLibrary, startConsumer, stopWith } from './consumer-process.js';
import { retryTopologyNames } from 'nestjs-amqp-retry';

const N = Number(process.env.CHAOS_N ?? 2000); // npm run test:chaos uses 5000
const MUST_FAIL_EVERY = 50; // 2% of the ids fail on every attempt and must end parked
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * The runs: each queue type, and quorum queues with the Redis idempotency store (no duplicate but a SIGKILL's).
 * The store's run uses quorum queues because classic queues dead-letter without confirms: the nacks sent in the
 * instant the dead-letter exchange is deleted are dropped by the broker (docs/reliability.md, "Limits"), which a store cannot
 * help; with a quorum queue's at-least-once dead-lettering, lost must be 0 and any loss is the store's fault.
 */
const RUNS = [
  { queueType: 'classic', store: 'none' },
  { queueType: 'quorum', store: 'none' },
  { queueType: 'quorum', store: 'redis' },
] as const;

async function sigkill(child: ChildProcess): Promise<void> {
  await stopWith(child, 'SIGKILL');
}

/** Counts the messages in a queue through a connection that is replaced when the chaos kills it. */
class ResilientCounter {
  private broker?: Promise<TestBroker>;

  constructor(private readonly url: string) {}

  async count(queue: string): Promise<number> {
    try {
      this.broker ??= TestBroker.connect(this.url);
      const count = await (await this.broker).count(queue);
      if (count === undefined) throw new Error(`no queue ${queue}`);
      return count;
    } catch {
      const dead = this.broker;
      this.broker = undefined;
      await (await dead?.catch(() => undefined))?.close();
      return 0;
    }
  }

  async close(): Promise<void> {
    await (await this.broker?.catch(() => undefined))?.close();
  }
}

/**
 * The chaos restarts its broker and raises a memory alarm on it: it runs on a node of its own (of the version under
 * test: see PrivateBroker), never on the broker AMQP_URL names, which others may use at the same time.
 */
let node: PrivateBroker;
beforeAll(async () => {
  node = await PrivateBroker.start();
  process.stdout.write(`Chaos on ${node.name}, RabbitMQ ${node.version} (${node.url})\n`);
}, 600_000);
afterAll(async () => {
  await node?.stop();
}, 120_000);

describe.each(RUNS)(
  `chaos on $queueType queues, idempotency store: $store: ${N} messages through connection kills, a broker restart, SIGKILLs, a deleted exchange and blocked publishers`,
  ({ queueType, store }) => {
    const queue = uniqueName(`chaos.${queueType}${store === 'none' ? '' : `.${store}`}`);
    const results = `${queue}.results`;
    const connection = `chaos-${randomUUID()}`;
    const redisPrefix = `${queue}:`;
    const env = () => ({
      CHAOS_URL: node.url,
      CHAOS_QUEUE: queue,
      CHAOS_RESULTS: results,
      CHAOS_CONNECTION: connection,
      CHAOS_QUEUE_TYPE: queueType,
      ...(store === 'redis' ? { CHAOS_REDIS_URL: REDIS_URL, CHAOS_REDIS_PREFIX: redisPrefix } : {}),
    });
    let child: ChildProcess | undefined;

    beforeAll(buildLibrary, 150_000);

    afterAll(async () => {
      if (child && child.exitCode === null) await sigkill(child);
      // The store's keys first: a broker that is down at this point must not leave them behind.
      if (store === 'redis') {
        const redis = new Redis(REDIS_URL);
        const keys = await redis.keys(`${redisPrefix}*`);
        if (keys.length > 0) await redis.del(...keys);
        redis.disconnect();
      }
      const broker = await TestBroker.connect(node.url);
      await broker.deleteRetryTopology(queue, { queues: [results] });
      await broker.close();
    });

    it('accounts for every id: handled or parked, none lost', async () => {
      const started = Date.now();
      const setup = await TestBroker.connect(node.url);
      await setup.declareQueue(results);
      child = await startConsumer(env()); // declares the topology
      const killed = new Set<number>(); // the pids SIGKILLed
      const ids = Array.from({ length: N }, (_, id) => id);
      for (const id of ids)
        setup.channel.sendToQueue(queue, Buffer.from(JSON.stringify({ id, mustFail: id % MUST_FAIL_EVERY === 0 })), {
          persistent: true,
          messageId: `chaos-${id}`,
        });
      await (setup.channel as amqp.ConfirmChannel).waitForConfirms();
      await setup.close();

      const faults: string[] = [];
      const counter = new ResilientCounter(node.url);
      const progress = async () => (await counter.count(results)) / N;
      const at = async (fraction: number, what: string, inject: () => Promise<void>) => {
        await waitFor(async () => (await progress()) >= fraction, `progress ${fraction}`, 120_000);
        await inject();
        faults.push(what);
      };
      await at(0.1, 'connection kill', async () => void (await node.closeConnections(connection)));
      await at(0.2, 'SIGKILL', async () => {
        killed.add(child!.pid!);
        await sigkill(child!);
        child = await startConsumer(env());
      });
      await at(0.35, 'connection kill', async () => void (await node.closeConnections(connection)));
      await at(0.5, 'broker restart', async () => node.restart());
      await at(0.65, 'SIGKILL', async () => {
        killed.add(child!.pid!);
        await sigkill(child!);
        child = await startConsumer(env());
      });
      await at(0.75, 'dead-letter exchange deleted', async () => {
        // An operator's mistake: a nack into it would be dropped by the broker unless the library notices first.
        // (The library's check before a nack is shown on its own by test/reliability/deleted-topology; here a
        // reconnection may declare it again first.)
        const operator = await TestBroker.connect(node.url);
        await operator.channel.deleteExchange(`${queue}.dlx`);
        await operator.close();
      });
      await at(0.8, 'connection kill', async () => void (await node.closeConnections(connection)));
      await at(0.9, 'publishers blocked for 2 s', async () => {
        const restore = await node.raiseMemoryAlarm();
        try {
          await new Promise((resolve) => setTimeout(resolve, 2_000));
        } finally {
          await restore();
        }
      });
      await counter.close();

      const mustFail = ids.filter((id) => id % MUST_FAIL_EVERY === 0);
      const shouldSucceed = N - mustFail.length;
      const broker = await TestBroker.connect(node.url);
      // Each handler call sends one result with a nonce of its own: a result the publisher sent again (at least once,
      // after a connection kill) repeats the nonce; a second call of the handler has a new one.
      const handled = new Map<number, Set<string>>();
      const pids = new Map<number, number[]>();
      let resultCount = 0;
      const parked = new Map<number, string>();
      try {
        await waitFor(
          async () => {
            for (const m of await broker.drain(results)) {
              const { id, call, pid } = JSON.parse(m.content.toString()) as { id: number; call: string; pid: number };
              if (!handled.get(id)?.has(call)) pids.set(id, [...(pids.get(id) ?? []), pid]);
              handled.set(id, (handled.get(id) ?? new Set()).add(call));
              resultCount++;
            }
            for (const m of await broker.drain(`${queue}.error`)) {
              parked.set((JSON.parse(m.content.toString()) as { id: number }).id, String(m.properties.headers?.['x-parked-reason']));
            }
            return new Set([...handled.keys(), ...parked.keys()]).size === N && (await broker.count(queue)) === 0;
          },
          'every id handled or parked',
          180_000,
        ).catch(() => undefined); // the accounting below says what is missing
      } finally {
        await broker.close();
      }

      const lost = ids.filter((id) => !handled.has(id) && !parked.has(id));
      const wronglyParked = ids.filter((id) => id % MUST_FAIL_EVERY !== 0 && parked.has(id));
      if (store === 'redis' && lost.length > 0) {
        // Where the lost ids stand in the store, for whoever reads a failure.
        const redis = new Redis(REDIS_URL);
        const states = await Promise.all(
          lost.slice(0, 10).map(async (id) => {
            const key = `${redisPrefix}${encodeURIComponent(queue)}:chaos-${id}`;
            return `${id}: ${await redis.get(key)} (pttl ${await redis.pttl(key)})`;
          }),
        );
        redis.disconnect();
        const probe = await TestBroker.connect(node.url);
        const where = [];
        for (const name of [queue, ...retryTopologyNames(queue, { delays: [50, 100] }).tiers])
          where.push(`${name}: ${await probe.count(name)} ready, ${await probe.consumers(name)} consumer(s)`);
        await probe.close();
        process.stdout.write(`Lost ids in the store: ${states.join('; ')}\nQueues: ${where.join('; ')}\n`);
      }
      const duplicates = [...handled.values()].filter((calls) => calls.size > 1).length;
      // A process SIGKILLed after its handler's work but before the record (one store round trip) makes a duplicate
      // that no store can prevent; any other duplicate is a defect of the store's protocol.
      const twice = [...pids.entries()].filter(([, calls]) => calls.length > 1);
      // (Explained: the first call ran in a process that was SIGKILLed, the next in another one. Two calls in one
      // process, as after a connection kill, are not.)
      const unexplained = twice.filter(([, [first, ...rest]]) => !(killed.has(first) && rest.every((pid) => pid !== first))).map(([id]) => id);
      const resent = resultCount - [...handled.values()].reduce((sum, calls) => sum + calls.size, 0);
      const table = [
        '| published | handled | parked | lost | handled more than once | of them, not by a SIGKILL | results re-sent by the publisher | should succeed but parked | faults | time |',
        '|---|---|---|---|---|---|---|---|---|---|',
        `| ${N} | ${handled.size} | ${parked.size} | ${lost.length} | ${duplicates} | ${unexplained.length} | ${resent} | ${wronglyParked.length} | ${faults.join(', ')} | ${((Date.now() - started) / 1000).toFixed(1)} s |`,
      ].join('\n');
      process.stdout.write(`\nChaos result (${queueType} queues, idempotency store: ${store}, N=${N}):\n${table}\n\n`);

      expect(faults).toEqual([
        'connection kill',
        'SIGKILL',
        'connection kill',
        'broker restart',
        'SIGKILL',
        'dead-letter exchange deleted',
        'connection kill',
        'publishers blocked for 2 s',
      ]);
      expect(lost).toEqual([]);
      // With the store, a copy of a handled message is acked without a call: no id is handled twice, but for a
      // process killed between its handler's work and the record (docs/idempotency-and-ordering.md, "Crash windows").
      if (store === 'redis') expect(unexplained).toEqual([]);
      expect(wronglyParked).toEqual([]);
      expect(handled.size).toBe(shouldSucceed);
      expect([...parked.values()].every((reason) => reason === 'exhausted')).toBe(true);
      expect(parked.size).toBe(mustFail.length);
    }, 600_000);
  },
);
