import type { INestApplicationContext } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { DataSource } from 'typeorm';
import pg from 'pg';
import {
  OutboxPublisher,
  pgOutboxAdapter,
  RetryConfigError,
  RetryEngine,
  typeormOutboxAdapter,
  type OutboxAdapter,
  type RetryContext,
} from 'nestjs-amqp-retry';
import { POSTGRES_URL } from '../support/stores.js';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { TestBroker, uniqueName, waitFor } from '../support/broker.js';
import { resolveModuleConfig } from '../../libs/amqp-retry/src/core/config/module.config.js';
import { readOutbox } from '../../libs/amqp-retry/src/core/outbox/outbox.config.js';
import { dropTables, knexKind, pgKind, sql, typeormKind, uniqueTable, useOutboxSuite, type OutboxKind } from '../support/outbox.js';
import { cleanUp } from '../support/suite.js';

describe.each([
  ['pg', pgKind, true],
  ['typeorm', typeormKind, true],
  ['knex (the docs example, without listen)', knexKind, false],
] as const)('the outbox and inbox with the %s adapter', (_name, makeKind, listens) => {
  const suite = useOutboxSuite('e2e.outbox', { kind: makeKind, extraQueues: (queue) => [`${queue}.sink`] });
  let effects: string;

  beforeEach(async () => {
    effects = uniqueTable('e2e_effects');
    suite.tables.push(effects);
    await sql(`CREATE TABLE "${effects}" (id text PRIMARY KEY, n integer NOT NULL)`);
  });

  const startWriter = async (extra: object = {}, providers: Parameters<typeof startApp>[0] = []) => {
    const app = await startApp(providers, { ...TEST_OPTIONS, outbox: { adapter: suite.kind.adapter, table: suite.table, ...extra } });
    suite.apps.push(app);
    return app.get(OutboxPublisher);
  };

  /** Collects what arrives in a queue of the test's, with the time of arrival. */
  const sink = async () => {
    const name = `${suite.queue}.sink`;
    await suite.broker.declareQueue(name);
    const got: Array<{ message: ConsumeMessage; at: number }> = [];
    await suite.broker.channel.consume(name, (message) => message && (got.push({ message, at: Date.now() }), suite.broker.channel.ack(message)));
    return { name, got };
  };

  it('publishes what committed, never what rolled back; rows end sent', async () => {
    const outbox = await startWriter();
    const { name, got } = await sink();
    const receipt = await suite.kind.inTransaction(async (tx) => {
      await suite.kind.exec(tx, `INSERT INTO "${effects}" (id, n) VALUES ('a', 1)`);
      return outbox.publish(tx, {
        exchange: '',
        routingKey: name,
        body: { order: 'a' },
        properties: { messageId: 'm-a', headers: { 'x-tenant': 't1' }, correlationId: 'req-7', type: 'order.created.v2', appId: 'shop' },
      });
    });
    await expect(
      suite.kind.inTransaction(async (tx) => {
        await outbox.publish(tx, { exchange: '', routingKey: name, body: { order: 'b' }, properties: { messageId: 'm-b' } });
        throw new Error('the business change failed');
      }),
    ).rejects.toThrow('the business change failed');
    await suite.kind.inTransaction((tx) =>
      outbox.publish(tx, { exchange: '', routingKey: name, body: Buffer.from('raw'), properties: { messageId: 'm-c' } }),
    );
    await waitFor(() => got.length === 2, 'two messages');
    await new Promise((resolve) => setTimeout(resolve, 300)); // nothing more comes
    expect(got.map((g) => g.message.properties.messageId)).toEqual(['m-a', 'm-c']);
    expect(JSON.parse(got[0].message.content.toString())).toEqual({ order: 'a' });
    expect(got[0].message.properties).toMatchObject({
      contentType: 'application/json',
      deliveryMode: 2,
      headers: { 'x-tenant': 't1' },
      correlationId: 'req-7',
      type: 'order.created.v2',
      appId: 'shop',
    });
    // The receipt says what was written and then sent: the row, the address and the properties with their defaults.
    expect(receipt).toEqual({
      id: expect.stringMatching(/^\d+$/),
      messageId: 'm-a',
      exchange: '',
      routingKey: name,
      delayMs: 0,
      properties: {
        messageId: 'm-a',
        persistent: true,
        contentType: 'application/json',
        headers: { 'x-tenant': 't1' },
        correlationId: 'req-7',
        type: 'order.created.v2',
        appId: 'shop',
      },
    });
    expect(await sql(`SELECT id::text AS id FROM "${suite.table}" WHERE id = $1`, [receipt.id])).toEqual([{ id: receipt.id }]);
    expect(got[1].message.content.toString()).toBe('raw');
    await waitFor(async () => (await sql(`SELECT state FROM "${suite.table}" WHERE state <> 'sent'`)).length === 0, 'both rows marked sent');
    expect(await sql(`SELECT count(*)::int AS n FROM "${suite.table}"`)).toEqual([{ n: 2 }]);
  });

  it(
    listens
      ? 'NOTIFY wakes the relay at the commit: published in well under the poll interval'
      : 'without listen, the relay polls: published within the poll interval',
    async () => {
      const pollMs = listens ? 60_000 : 300;
      const outbox = await startWriter({ pollInterval: pollMs });
      const { name, got } = await sink();
      await new Promise((resolve) => setTimeout(resolve, 200)); // the relay's first round (at start) is over
      const committed: number[] = [];
      for (let i = 0; i < 5; i++) {
        await suite.kind.inTransaction((tx) => outbox.publish(tx, { exchange: '', routingKey: name, body: { i } }));
        committed.push(Date.now());
        await waitFor(() => got.length === i + 1, `message ${i}`, 5_000);
      }
      const lags = got.map((g, i) => g.at - committed[i]);
      expect(Math.max(...lags)).toBeLessThan(listens ? 1_000 : pollMs + 1_000);
      expect(typeof suite.kind.adapter.listen === 'function').toBe(listens);
    },
  );

  if (listens) {
    it("an outbox of the same name in another schema wakes only its own relays, not this one's", async () => {
      const [mine, theirs] = [uniqueTable('e2e_mine'), uniqueTable('e2e_theirs')];
      suite.afterThis(() => sql(`DROP SCHEMA IF EXISTS "${mine}", "${theirs}" CASCADE`));
      const { adapter } = suite.kind;
      let rounds = 0; // this relay's claims
      const counted: OutboxAdapter = {
        ...adapter,
        execute: (tx, text, params) => (text.startsWith('SELECT o.id') && rounds++, adapter.execute(tx, text, params)),
      };
      const start = async (schema: string, outboxAdapter: OutboxAdapter) => {
        const app = await startApp([], { ...TEST_OPTIONS, outbox: { adapter: outboxAdapter, table: suite.table, schema, pollInterval: '1m' } });
        suite.apps.push(app);
        return app.get(OutboxPublisher);
      };
      const own = await start(mine, counted);
      const other = await start(theirs, adapter);
      const { name, got } = await sink();
      await new Promise((resolve) => setTimeout(resolve, 300)); // the relays' first rounds (at start) are over
      const before = rounds;
      for (let i = 0; i < 20; i++) await suite.kind.inTransaction((tx) => other.publish(tx, { exchange: '', routingKey: name, body: { i } }));
      await waitFor(() => got.length === 20, "the other schema's 20 messages", 5_000); // its relay was woken at each commit
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(rounds - before).toBe(0);
      const committed = Date.now();
      await suite.kind.inTransaction((tx) => own.publish(tx, { exchange: '', routingKey: name, body: { mine: true } }));
      await waitFor(() => got.length === 21, 'its own message', 5_000);
      expect(Date.now() - committed).toBeLessThan(1_000); // woken by its own commit, within a poll interval of 1 min
      expect(rounds - before).toBeGreaterThan(0);
    });
  }

  it('parks a row the broker refuses (404: no such exchange) with the reason, and sends the rows after it', async () => {
    const outbox = await startWriter();
    const { name, got } = await sink();
    const missing = uniqueName('e2e.no-such-exchange');
    await suite.kind.inTransaction((tx) => outbox.publish(tx, { exchange: missing, routingKey: 'k', body: { doomed: true } }));
    await suite.kind.inTransaction((tx) => outbox.publish(tx, { exchange: '', routingKey: name, body: { fine: true } }));
    // The refused row closes the relay's channel under the good one, sent again on a fresh channel: on a loaded machine
    // (two e2e files at once against a chroot's broker) that round, a poll apart, took more than 10 s once.
    await waitFor(() => got.length === 1, 'the good row', 20_000);
    const [parked] = await waitFor(async () => {
      const rows = await sql<{ state: string; last_error: string; attempts: number }>(
        `SELECT state, last_error, attempts FROM "${suite.table}" WHERE exchange = $1`,
        [missing],
      );
      return rows[0]?.state === 'parked' && rows;
    }, 'the refused row parked');
    expect(parked.attempts).toBe(1);
    expect(parked.last_error).toMatch(new RegExp(`refused by the broker: .*no exchange '${missing.replace('.', '\\.')}'`));
  });

  it('deletes sent rows after their retention, and keeps parked ones', async () => {
    const outbox = await startWriter({ retention: '300ms', pollInterval: '100ms' });
    const { name, got } = await sink();
    const missing = uniqueName('e2e.no-such-exchange');
    await suite.kind.inTransaction((tx) => outbox.publish(tx, { exchange: '', routingKey: name, body: { kept: false } }));
    await waitFor(() => got.length === 1, 'the good row sent');
    await suite.kind.inTransaction((tx) => outbox.publish(tx, { exchange: missing, routingKey: 'k', body: { parked: true } }));
    await waitFor(
      async () => (await sql(`SELECT state FROM "${suite.table}"`)).map((r) => r.state).join() === 'parked',
      'the sent row deleted',
      5_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 600)); // two more retentions: the parked row stays
    expect((await sql(`SELECT state FROM "${suite.table}"`)).map((r) => r.state)).toEqual(['parked']);
  });

  it('sends the rows of one order key in commit order, one at a time', async () => {
    const outbox = await startWriter();
    const { name, got } = await sink();
    // Concurrent transactions on one key: the second waits for the first's commit, so ids follow commit order.
    const committed: number[] = [];
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        suite.kind
          .inTransaction(async (tx) => {
            await outbox.publish(tx, { exchange: '', routingKey: name, body: { i }, orderKey: 'customer-1' });
            await new Promise((resolve) => setTimeout(resolve, (i * 7) % 11)); // commits in another order than they started
            return i;
          })
          .then((i) => committed.push(i)),
      ),
    );
    await waitFor(() => got.length === 30, '30 messages');
    expect(got.map((g) => (JSON.parse(g.message.content.toString()) as { i: number }).i)).toEqual(committed);
  });

  it('the inbox: runs the handler in the transaction, once per message id; a failure rolls back and retries', async () => {
    let failNext = true;
    const Handler = handlerFor(
      { queue: suite.queue, delays: ['100ms'], inbox: { adapter: suite.kind.adapter, table: suite.inboxTable } },
      async (payload, context) => {
        const { id } = payload as { id: string };
        const tx = (context as RetryContext<unknown>).transaction;
        await suite.kind.exec(tx, `INSERT INTO "${effects}" (id, n) VALUES ($1, 1) ON CONFLICT (id) DO UPDATE SET n = "${effects}".n + 1`, [id]);
        if (id === 'flaky' && failNext) {
          failNext = false;
          throw new Error('fails after its write: the write must roll back');
        }
      },
    );
    const app = await startApp([Handler], TEST_OPTIONS);
    suite.apps.push(app);
    const handler = handlerOf(app, Handler);
    await suite.broker.publish('', suite.queue, { id: 'once' }, { messageId: 'm-once' });
    await suite.broker.publish('', suite.queue, { id: 'once' }, { messageId: 'm-once' }); // a duplicate
    await suite.broker.publish('', suite.queue, { id: 'flaky' }, { messageId: 'm-flaky' });
    await suite.broker.publish('', suite.queue, { id: 'no-id' }); // parked: the inbox cannot recognise its copies
    await waitFor(
      async () => (await sql(`SELECT 1 FROM "${effects}"`)).length === 2 && (await suite.broker.count(`${suite.queue}.error`)) === 1,
      'the effects and the park',
    );
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'everything settled');
    expect(await sql(`SELECT id, n FROM "${effects}" ORDER BY id`)).toEqual([
      { id: 'flaky', n: 1 },
      { id: 'once', n: 1 },
    ]);
    expect(handler.calls.filter((c) => (c.payload as { id: string }).id === 'once')).toHaveLength(1);
    expect(handler.calls.filter((c) => (c.payload as { id: string }).id === 'flaky').map((c) => c.attempt)).toEqual([1, 2]);
    const [parked] = await suite.broker.drain(`${suite.queue}.error`);
    expect(parked.properties.headers?.['x-parked-reason']).toBe('malformed');
    expect(String(parked.properties.headers?.['x-exception-message'])).toMatch(/no message id, which the inbox needs/);
    expect((await sql(`SELECT queue, message_id FROM "${suite.inboxTable}" ORDER BY message_id`)).map((r) => r.message_id)).toEqual([
      'm-flaky',
      'm-once',
    ]);
  });

  it('the inbox: a handler that catches a failed statement is not acked with nothing written; it fails and retries', async () => {
    await sql(`INSERT INTO "${effects}" (id, n) VALUES ('taken', 0)`);
    const Handler = handlerFor(
      { queue: suite.queue, delays: ['100ms'], inbox: { adapter: suite.kind.adapter, table: suite.inboxTable } },
      async (_payload, context) => {
        const tx = (context as RetryContext<unknown>).transaction;
        await suite.kind.exec(tx, `INSERT INTO "${effects}" (id, n) VALUES ('mine', ${context.attempt})`, []);
        // "Insert, ignore the duplicate" without ON CONFLICT: the failure aborts the transaction, caught or not.
        if (context.attempt === 1) await suite.kind.exec(tx, `INSERT INTO "${effects}" (id, n) VALUES ('taken', 1)`, []).catch(() => undefined);
      },
    );
    const app = await startApp([Handler], TEST_OPTIONS);
    suite.apps.push(app);
    const handler = handlerOf(app, Handler);
    await suite.broker.publish('', suite.queue, { id: 'x' }, { messageId: 'm-aborted' });
    await waitFor(async () => (await sql(`SELECT n FROM "${effects}" WHERE id = 'mine'`)).length === 1, 'the second attempt committed');
    expect(handler.calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(await sql(`SELECT n FROM "${effects}" WHERE id = 'mine'`)).toEqual([{ n: 2 }]);
    expect((await sql(`SELECT message_id FROM "${suite.inboxTable}"`)).map((r) => r.message_id)).toEqual(['m-aborted']);
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'the message settled');
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
  });

  it('end to end: a business row and its message commit together, and the consumer applies it once', async () => {
    const Handler = handlerFor(
      { queue: suite.queue, delays: ['100ms'], inbox: { adapter: suite.kind.adapter, table: suite.inboxTable } },
      async (payload, context) => {
        const { id } = payload as { id: string };
        await suite.kind.exec((context as RetryContext<unknown>).transaction, `INSERT INTO "${effects}" (id, n) VALUES ($1, 1)`, [`applied-${id}`]);
      },
    );
    const outbox = await startWriter({}, [Handler]);
    for (let i = 0; i < 20; i++) {
      await suite.kind.inTransaction(async (tx) => {
        await suite.kind.exec(tx, `INSERT INTO "${effects}" (id, n) VALUES ($1, 0)`, [`order-${i}`]);
        await outbox.publish(tx, { exchange: '', routingKey: suite.queue, body: { id: `order-${i}` } });
      });
    }
    await waitFor(async () => (await sql(`SELECT 1 FROM "${effects}" WHERE id LIKE 'applied-%'`)).length === 20, '20 effects', 15_000);
    expect(await sql(`SELECT count(*)::int AS n FROM "${suite.inboxTable}"`)).toEqual([{ n: 20 }]);
  });
});

const resolveConfig = () => resolveModuleConfig({ ...TEST_OPTIONS });
const readOutboxFor = (kind: OutboxKind, table: string) => readOutbox({ adapter: kind.adapter, table, relay: false }, (k) => k);

describe('the outbox with TypeORM: a QueryRunner, and a manager outside any transaction', () => {
  let dataSource: DataSource;
  let broker: TestBroker;
  const apps: INestApplicationContext[] = [];
  const table = uniqueTable('e2e_outbox');
  const sinkQueue = uniqueName('e2e.outbox.sink');

  beforeAll(async () => {
    dataSource = await new DataSource({ type: 'postgres', url: POSTGRES_URL }).initialize();
    broker = await TestBroker.connect();
  });
  afterAll(async () => {
    await cleanUp(
      ...apps.splice(0).map((app) => () => app.close()),
      () => broker?.channel.deleteQueue(sinkQueue),
      () => broker?.close(),
      () => dropTables(table),
      () => dataSource?.destroy(),
    );
  });

  it('publishes through a QueryRunner in a transaction, and refuses a manager that is in none', async () => {
    const app = await startApp([], { ...TEST_OPTIONS, outbox: { adapter: typeormOutboxAdapter(dataSource), table } });
    apps.push(app);
    const outbox = app.get(OutboxPublisher);
    await broker.declareQueue(sinkQueue);
    const runner = dataSource.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    await outbox.publish(runner, { exchange: '', routingKey: sinkQueue, body: { via: 'runner' } });
    await runner.commitTransaction();
    await runner.release();
    await expect(outbox.publish(dataSource.manager, { exchange: '', routingKey: sinkQueue, body: { via: 'no transaction' } })).rejects.toThrow(
      /typeormOutboxAdapter: this EntityManager or QueryRunner is not in a transaction/,
    );
    const [message] = await broker.take(sinkQueue, 1);
    expect(JSON.parse(message.content.toString())).toEqual({ via: 'runner' });
    expect(await sql(`SELECT count(*)::int AS n FROM "${table}"`)).toEqual([{ n: 1 }]);
  });
});

describe.each([
  ['pg', pgKind],
  ['typeorm', typeormKind],
] as const)('the inbox on %s: a handler call past its time limit', (_name, kind) => {
  const suite = useOutboxSuite('e2e.outbox.late', { kind });

  it("commits none of the abandoned call's later writes: its connection is closed at the timeout, not rolled back behind it", async () => {
    const effects = uniqueTable('e2e_effects');
    suite.tables.push(effects);
    await sql(`CREATE TABLE "${effects}" (id text PRIMARY KEY)`);
    const Handler = handlerFor(
      { queue: suite.queue, delays: ['100ms'], timeout: '200ms', inbox: { adapter: suite.kind.adapter, table: suite.inboxTable } },
      async (_payload, context) => {
        const tx = (context as RetryContext<unknown>).transaction;
        // The first attempt's statement outlives the time limit; its next one comes after the timeout.
        if (context.attempt === 1) await suite.kind.exec(tx, 'SELECT pg_sleep(0.5)', []);
        await suite.kind.exec(tx, `INSERT INTO "${effects}" (id) VALUES ($1)`, [`attempt-${context.attempt}`]);
      },
    );
    suite.app = await startApp([Handler], TEST_OPTIONS);
    await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'm-late' });
    await waitFor(async () => (await sql(`SELECT 1 FROM "${effects}"`)).length > 0, 'a committed attempt', 10_000);
    await new Promise((resolve) => setTimeout(resolve, 700)); // past the abandoned call's sleep, and its next statement
    expect((await sql(`SELECT id FROM "${effects}" ORDER BY id`)).map((r) => r.id)).toEqual(['attempt-2']);
  });
});

describe('the outbox with pg: a client that is in no transaction', () => {
  const table = uniqueTable('e2e_outbox');
  let pool: pg.Pool;
  let app: INestApplicationContext | undefined;

  beforeAll(() => {
    pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 3 });
  });
  afterAll(async () => {
    await cleanUp(
      () => app?.close(),
      () => dropTables(table),
      () => pool.end(),
    );
  });

  it('refuses the publish (the row would commit on its own) and writes nothing', async () => {
    app = await startApp([], { ...TEST_OPTIONS, outbox: { adapter: pgOutboxAdapter(pool), table } });
    const outbox = app.get(OutboxPublisher);
    const client = await pool.connect();
    try {
      await expect(outbox.publish(client, { exchange: '', routingKey: 'nowhere', body: { via: 'no transaction' } })).rejects.toThrow(
        /pgOutboxAdapter: this client is not in a transaction.*call BEGIN on it first/,
      );
      await client.query('BEGIN');
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect(await sql(`SELECT count(*)::int AS n FROM "${table}"`)).toEqual([{ n: 0 }]);
  });
});

describe('the outbox with a delay', () => {
  const suite = useOutboxSuite('e2e.outbox.sink');
  let prefix: string;
  beforeEach(() => (prefix = suite.ladder()));

  it('delivers a delayed row after its delay from the commit, never early; a delay with delays off fails the publish', async () => {
    suite.app = await startApp([], { ...TEST_OPTIONS, delayedDelivery: { prefix }, outbox: { adapter: suite.kind.adapter, table: suite.table } });
    const outbox = suite.app.get(OutboxPublisher);
    await suite.broker.declareQueue(suite.queue);
    const got: Array<{ body: { n: string }; at: number }> = [];
    await suite.broker.channel.consume(
      suite.queue,
      (m) => m && (got.push({ body: JSON.parse(m.content.toString()), at: Date.now() }), suite.broker.channel.ack(m)),
    );
    const receipts = await suite.kind.inTransaction(async (tx) => [
      await outbox.publish(tx, { exchange: '', routingKey: suite.queue, body: { n: 'later' }, delay: '800ms' }),
      await outbox.publish(tx, { exchange: '', routingKey: suite.queue, body: { n: 'now' } }),
    ]);
    expect(receipts.map((r) => r.delayMs)).toEqual([800, 0]);
    const committed = Date.now();
    await waitFor(() => got.length === 2, 'both messages', 10_000);
    expect(got.map((g) => g.body.n)).toEqual(['now', 'later']);
    expect(got[1].at - committed).toBeGreaterThanOrEqual(800 - 50); // counted from the row's insert, a moment before the commit
    const plain = await startApp([], { ...TEST_OPTIONS, outbox: { adapter: suite.kind.adapter, table: suite.table, relay: false } });
    try {
      await expect(
        suite.kind.inTransaction((tx) => plain.get(OutboxPublisher).publish(tx, { exchange: '', routingKey: suite.queue, body: {}, delay: '1s' })),
      ).rejects.toThrow(/Delayed delivery is off/);
    } finally {
      await plain.close();
    }
  });
});

describe('the outbox: configuration and tables', () => {
  let kind: OutboxKind;
  beforeAll(async () => {
    kind = await pgKind();
  });
  afterAll(async () => kind?.close());

  it('refuses a hostile table name at start, naming the option', async () => {
    await expect(startApp([], { ...TEST_OPTIONS, outbox: { adapter: kind.adapter, table: 'x"; DROP TABLE users; --' } })).rejects.toThrow(
      RetryConfigError,
    );
    await expect(startApp([], { ...TEST_OPTIONS, outbox: { adapter: kind.adapter, table: 'x"; DROP TABLE users; --' } })).rejects.toThrow(
      /RetryModule option "outbox\.table" is "x\\"; DROP TABLE users; --"\. Use letters, digits and _/,
    );
  });

  it('with createTables: false, a missing table fails the start naming the migration', async () => {
    const table = uniqueTable('e2e_missing');
    await expect(startApp([], { ...TEST_OPTIONS, outbox: { adapter: kind.adapter, table, createTables: false } })).rejects.toThrow(
      new RegExp(`The table ${table} does not exist, and createTables is false: run libs/amqp-retry/migrations/001_outbox_inbox\\.sql`),
    );
  });

  it('instances starting at once create the tables without a race (10 rounds of 6)', async () => {
    for (let round = 0; round < 10; round++) {
      const table = uniqueTable('e2e_race');
      const engines = Array.from({ length: 6 }, () =>
        RetryEngine.fromConfig(
          { ...resolveConfig(), outbox: readOutboxFor(kind, table) },
          { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined },
        ),
      );
      try {
        await Promise.all(engines.map((engine) => engine.prepare([])));
      } finally {
        await Promise.all(engines.map((engine) => engine.close()));
        await dropTables(table);
      }
    }
  });
});
