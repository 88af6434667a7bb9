import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { dropTables, sql, uniqueTable } from '../support/outbox.js';
import { PrivateBroker } from '../support/private-broker.js';
import { POSTGRES_URL } from '../support/stores.js';
import { buildLibrary, startChild, stopWith } from './consumer-process.js';

/** Orders per run: OUTBOX_CHAOS_N, else CHAOS_N (npm run test:chaos: 5000), else 1000 (CI size). */
const N = Number(process.env.OUTBOX_CHAOS_N ?? process.env.CHAOS_N ?? 1000);
const KILLS_EACH = 3;
const CUTS = 4;

/**
 * Exactly-once effects through the outbox and the inbox: a producer process writes N orders, each with its outbox
 * message in the same transaction, and relays them; a consumer process applies each message to an effects table
 * through the inbox. Both are SIGKILLed at random moments (and restarted), and the broker closes their connections
 * several times. Afterwards every order has exactly one effect: 0 lost, 0 twice, every outbox row sent.
 * The faults run on a node of the test's own (PrivateBroker): closing connections on a shared broker is not ours to do.
 */
let node: PrivateBroker;
beforeAll(async () => {
  node = await PrivateBroker.start();
  process.stdout.write(`Outbox chaos on ${node.name}, RabbitMQ ${node.version} (${node.url})\n`);
}, 600_000);
afterAll(async () => {
  await node?.stop();
}, 120_000);

describe.each(['classic', 'quorum'] as const)(
  `outbox and inbox chaos on %s queues: ${N} orders through SIGKILLs and connection cuts`,
  (queueType) => {
    const queue = uniqueName(`chaos.outbox.${queueType}`);
    const orders = uniqueTable('chaos_orders');
    const effects = uniqueTable('chaos_effects');
    const outboxTable = uniqueTable('chaos_outbox');
    const inboxTable = uniqueTable('chaos_inbox');
    const connection = `chaos-outbox-${randomUUID()}`;
    const env = {
      CHAOS_URL: '',
      CHAOS_QUEUE: queue,
      CHAOS_CONNECTION: connection,
      CHAOS_QUEUE_TYPE: queueType,
      CHAOS_POSTGRES_URL: POSTGRES_URL,
      CHAOS_ORDERS: orders,
      CHAOS_EFFECTS: effects,
      CHAOS_OUTBOX: outboxTable,
      CHAOS_INBOX: inboxTable,
      CHAOS_N: String(N),
    };
    let producer: ChildProcess | undefined;
    let consumer: ChildProcess | undefined;

    beforeAll(buildLibrary, 150_000);
    beforeAll(async () => {
      env.CHAOS_URL = node.url;
      await sql(`CREATE TABLE "${orders}" (id integer PRIMARY KEY)`);
      await sql(`CREATE TABLE "${effects}" (order_id integer NOT NULL, pid integer NOT NULL)`);
    });
    afterAll(async () => {
      for (const child of [producer, consumer]) if (child && child.exitCode === null && child.signalCode === null) await stopWith(child, 'SIGKILL');
      await dropTables(orders, effects, outboxTable, inboxTable);
      const broker = await TestBroker.connect(node.url);
      await broker.deleteRetryTopology(queue);
      await broker.close();
    });

    it('every order has exactly one effect: 0 lost, 0 twice', async () => {
      const started = Date.now();
      consumer = await startChild('inbox-consumer.mjs', env); // declares the queue first: the relay publishes with mandatory
      producer = await startChild('outbox-producer.mjs', env);
      const count = async (table: string, what = 'count(*)') => Number((await sql<{ n: string }>(`SELECT ${what}::text AS n FROM "${table}"`))[0].n);
      // Random moments: producer kills while it writes, consumer kills and cuts while the consumer applies.
      const random = (from: number, to: number) => from + Math.random() * (to - from);
      const faults = [
        ...Array.from({ length: KILLS_EACH }, () => ({ at: random(0.05, 0.85), kind: 'SIGKILL producer' as const, of: orders })),
        ...Array.from({ length: KILLS_EACH }, () => ({ at: random(0.05, 0.9), kind: 'SIGKILL consumer' as const, of: effects })),
        ...Array.from({ length: CUTS }, () => ({ at: random(0.05, 0.9), kind: 'connections closed' as const, of: effects })),
      ].sort((a, b) => a.at - b.at);
      const done: string[] = [];
      for (const fault of faults) {
        const progress = async () => (fault.of === orders ? await count(orders) : await count(effects, 'count(DISTINCT order_id)')) / N;
        await waitFor(async () => (await progress()) >= fault.at, `progress ${fault.at.toFixed(2)} of ${fault.of}`, 300_000);
        if (fault.kind === 'SIGKILL producer') {
          await stopWith(producer, 'SIGKILL');
          producer = await startChild('outbox-producer.mjs', env);
        } else if (fault.kind === 'SIGKILL consumer') {
          await stopWith(consumer, 'SIGKILL');
          consumer = await startChild('inbox-consumer.mjs', env);
        } else {
          await node.closeConnections(connection);
        }
        done.push(`${fault.kind} at ${Math.round(fault.at * 100)}%`);
      }

      await waitFor(
        async () => (await count(orders)) === N && (await count(effects, 'count(DISTINCT order_id)')) === N,
        'every order applied',
        300_000,
      ).catch(() => undefined); // the accounting below says what is missing
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // a late second effect would land now

      const written = await count(orders);
      const lost = await sql<{ id: number }>(
        `SELECT o.id FROM "${orders}" o WHERE NOT EXISTS (SELECT 1 FROM "${effects}" e WHERE e.order_id = o.id) ORDER BY o.id LIMIT 20`,
      );
      const lostCount = await count(
        orders,
        `(SELECT count(*) FROM "${orders}" o WHERE NOT EXISTS (SELECT 1 FROM "${effects}" e WHERE e.order_id = o.id))`,
      );
      const twice = await sql<{ order_id: number; n: number }>(
        `SELECT order_id, count(*)::int AS n FROM "${effects}" GROUP BY order_id HAVING count(*) > 1 ORDER BY order_id LIMIT 20`,
      );
      const orphans = await count(
        effects,
        `(SELECT count(*) FROM "${effects}" e WHERE NOT EXISTS (SELECT 1 FROM "${orders}" o WHERE o.id = e.order_id))`,
      );
      const outboxStates = await sql<{ state: string; n: number }>(
        `SELECT state, count(*)::int AS n FROM "${outboxTable}" GROUP BY state ORDER BY state`,
      );
      const relayedTwice = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${outboxTable}" WHERE attempts > 1`);
      const table = [
        '| queues | orders written | applied once | lost | applied twice | effects without an order | outbox rows | producer kills | consumer kills | connection cuts | time |',
        '|---|---|---|---|---|---|---|---|---|---|---|',
        `| ${queueType} | ${written} | ${(await count(effects, 'count(DISTINCT order_id)')) - twice.length} | ${lostCount} | ${twice.length} | ${orphans} | ${outboxStates
          .map((s) => `${s.state} ${s.n}`)
          .join(
            ', ',
          )} (${relayedTwice[0].n} retried after a failed publish) | ${KILLS_EACH} | ${KILLS_EACH} | ${CUTS} | ${((Date.now() - started) / 1000).toFixed(1)} s |`,
      ].join('\n');
      process.stdout.write(`\nOutbox chaos (${queueType} queues, N=${N}): ${done.join(', ')}\n${table}\n\n`);

      expect(done).toHaveLength(KILLS_EACH * 2 + CUTS);
      expect(written).toBe(N);
      expect(lost).toEqual([]);
      expect(twice).toEqual([]);
      expect(orphans).toBe(0);
      expect(outboxStates).toEqual([{ state: 'sent', n: N }]);
    }, 900_000);
  },
);
