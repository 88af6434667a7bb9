import pg from 'pg';
import { IdempotencyStoreError, retryTopologyNames, PostgresIdempotencyStore, type IdempotencyStore } from 'nestjs-amqp-retry';
import { handlerFor, handlerOf, startApp, TEST_OPTIONS } from '../support/app.js';
import { waitFor } from '../support/broker.js';
import { useSuite } from '../support/suite.js';
import { POSTGRES_URL, postgresKind, redisKind, spied, uniqueSpace } from '../support/stores.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { storeKeyOf } from '../../libs/amqp-retry/src/pipeline/idempotency.step.js';

describe.each([redisKind, postgresKind])('handling each message once with the $name store', (kind) => {
  const suite = useSuite('e2e.once');
  const proxies: TcpProxy[] = [];
  let space: string;

  beforeEach(() => {
    space = uniqueSpace();
    suite.afterThis(async () => {
      for (const proxy of proxies.splice(0)) await proxy.stop();
      await kind.cleanUp(space);
    });
  });

  const start = async (Handler: ReturnType<typeof handlerFor>, store: IdempotencyStore) => {
    const app = await startApp([Handler], { ...TEST_OPTIONS, idempotency: { store } });
    suite.apps.push(app);
    return handlerOf(app, Handler);
  };

  it('publishing the same message id twice calls the handler once; the copy is acked', async () => {
    const Handler = handlerFor({ queue: suite.queue, prefetch: 1, delays: [100] }, () => undefined);
    const handler = await start(Handler, kind.create(space));
    await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'dup-1' });
    await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'dup-1' });
    await suite.broker.publish('', suite.queue, { n: 2 }, { messageId: 'after' }); // prefetch 1: the copy was settled before this runs
    await waitFor(() => handler.calls.length === 2, 'two handler calls');
    await suite.apps.pop()!.close();
    expect(handler.calls.map((c) => c.payload)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(await suite.broker.count(suite.queue)).toBe(0); // both copies acked
    expect(await kind.holds(space, storeKeyOf(suite.queue, 'dup-1'))).toBe(true);
  });

  it('a copy delivered to a second application while the first runs waits, and is acked without a call', async () => {
    let release!: () => void;
    const running = new Promise<void>((resolve) => (release = resolve));
    const Handler = handlerFor({ queue: suite.queue, prefetch: 1, delays: [100] }, () => running);
    const store = spied(kind.create(space));
    const first = await start(Handler, store);
    const second = await start(Handler, store);
    await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'both' });
    await waitFor(() => first.calls.length + second.calls.length === 1, 'the first copy running');
    await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'both' }); // the busy consumer has prefetch 1: the other gets it
    await waitFor(() => store.claims.includes('busy'), 'the second copy finding the claim');
    release();
    await waitFor(async () => store.claims.includes('handled') && (await suite.broker.count(suite.queue)) === 0, 'the copy acked');
    for (const app of suite.apps.splice(0)) await app.close();
    expect(first.calls.length + second.calls.length).toBe(1);
    expect(await suite.broker.count(suite.queue)).toBe(0); // nothing was left unacked (it would be back in the queue)
  });

  it('a store that is down: the message is retried through the tiers, not handled, and handled once the store is back', async () => {
    const proxy = await new TcpProxy('127.0.0.1', kind.port).start();
    proxies.push(proxy);
    await proxy.cut(); // the port is closed now
    const Handler = handlerFor({ queue: suite.queue, delays: ['400ms'], maxAttempts: 20 }, () => undefined);
    const handler = await start(Handler, kind.create(space, proxy.port));
    await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'down-1' });
    // In the tier: the failed claim was a retryable failure; the handler has not run.
    await waitFor(
      async () => (await suite.broker.count(retryTopologyNames(suite.queue, { delays: [400] }).tiers[0])) === 1,
      'the message in the retry tier',
    );
    expect(handler.calls).toEqual([]);
    await proxy.restore();
    await waitFor(() => handler.calls.length === 1, 'the call once the store is back', 20_000);
    expect(handler.calls[0].attempt).toBeGreaterThanOrEqual(2);
    expect(await suite.broker.count(`${suite.queue}.error`)).toBe(0);
  });

  it('a store that stays down: the message is parked as exhausted after its attempts, naming the store, never handled', async () => {
    const proxy = await new TcpProxy('127.0.0.1', kind.port).start();
    proxies.push(proxy);
    await proxy.cut();
    const Handler = handlerFor({ queue: suite.queue, delays: [100], maxAttempts: 3 }, () => undefined);
    const handler = await start(Handler, kind.create(space, proxy.port));
    await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'down-2' });
    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1, 20_000);
    expect(handler.calls).toEqual([]);
    expect(parked.properties.headers?.['x-parked-reason']).toBe('exhausted');
    expect(String(parked.properties.headers?.['x-exception-message'])).toContain('the idempotency store failed to claim');
    expect(parked.properties.headers?.['x-retry-attempts']).toBe(3);
    expect(new IdempotencyStoreError('claim', 'k', new Error('x')).name).toBe('IdempotencyStoreError');
  });

  it('after ttl a copy is handled again', async () => {
    const Handler = handlerFor(
      { queue: suite.queue, prefetch: 1, delays: [100], idempotency: { store: kind.create(space), ttl: '1500ms', claimTtl: '1s' } },
      () => undefined,
    );
    const app = await startApp([Handler], TEST_OPTIONS);
    suite.apps.push(app);
    const handler = handlerOf(app, Handler);
    await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'ttl-1' });
    await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'ttl-1' });
    await suite.broker.publish('', suite.queue, { n: 'marker' }, { messageId: 'marker' });
    await waitFor(() => handler.calls.length === 2, 'the first copy and the marker');
    const recordedAt = handler.calls[0].at;
    await waitFor(async () => !(await kind.holds(space, storeKeyOf(suite.queue, 'ttl-1'))), 'the record to expire', 5_000);
    expect(Date.now() - recordedAt).toBeGreaterThanOrEqual(1_400);
    await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'ttl-1' });
    await waitFor(() => handler.calls.length === 3, 'the copy after ttl');
    expect(handler.calls.map((c) => c.payload)).toEqual([{ n: 1 }, { n: 'marker' }, { n: 1 }]);
  });

  it('a failure releases the claim: the retry runs after the tier delay, not after the claim expires', async () => {
    const Handler = handlerFor({ queue: suite.queue, delays: [200], maxAttempts: 3 }, (_, ctx) => {
      if (ctx.attempt === 1) throw new Error('first attempt fails');
    });
    const handler = await start(Handler, kind.create(space)); // claims last 30 s
    await suite.broker.publish('', suite.queue, { n: 1 }, { messageId: 'fail-1' });
    await waitFor(() => handler.calls.length === 2, 'the retry', 10_000);
    expect(handler.calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(handler.calls[1].at - handler.calls[0].at).toBeLessThan(2_000);
    await waitFor(async () => (await suite.broker.count(suite.queue)) === 0, 'the ack');
    expect(await kind.holds(space, storeKeyOf(suite.queue, 'fail-1'))).toBe(true);
  });

  it('a message without a message id is parked as malformed, naming the fix', async () => {
    const Handler = handlerFor({ queue: suite.queue, delays: [100] }, () => undefined);
    const handler = await start(Handler, kind.create(space));
    await suite.broker.publish('', suite.queue, { n: 1 });
    const [parked] = await suite.broker.take(`${suite.queue}.error`, 1);
    expect(handler.calls).toEqual([]);
    expect(parked.properties.headers?.['x-parked-reason']).toBe('malformed');
    expect(String(parked.properties.headers?.['x-exception-message'])).toContain('give idempotency.key');
    expect(parked.properties.headers?.['x-retry-attempts']).toBe(0);
  });
});

describe('the PostgreSQL store creates and cleans its table', () => {
  const space = uniqueSpace();
  afterAll(() => postgresKind.cleanUp(space));

  it('six instances starting at once create the table without a race (10 rounds)', async () => {
    for (let round = 0; round < 10; round++) {
      const fresh = uniqueSpace();
      const stores = Array.from({ length: 6 }, () => postgresKind.create(fresh));
      try {
        const results = await Promise.all(stores.map((s, i) => s.claim(`q:${i}`, 't', 60_000)));
        expect(results).toEqual(Array(6).fill('claimed'));
      } finally {
        for (const s of stores) await s.close?.();
        await postgresKind.cleanUp(fresh);
      }
    }
  });

  it('creates the table and its expiry index on first use, twice without harm, and purges expired rows', async () => {
    const stores = [postgresKind.create(space), postgresKind.create(space)] as PostgresIdempotencyStore[];
    // Two instances starting at once both run the migration.
    expect(await Promise.all(stores.map((s) => s.claim('q:a', 't', 60_000)))).toEqual(expect.arrayContaining(['claimed', 'busy']));
    const [store] = stores;
    await store.markHandled('q:gone', 1);
    await store.claim('q:stale', 't', 1);
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
    try {
      const indexes = await pool.query('SELECT indexdef FROM pg_indexes WHERE tablename = $1', [space]);
      expect(indexes.rows.map((r: { indexdef: string }) => r.indexdef).join('\n')).toContain('(expires_at)');
      await waitFor(async () => (await store.purgeExpired()) === 0 || undefined, 'expired rows purged', 5_000);
      const left = await pool.query(`SELECT key, state FROM "${space}" ORDER BY key`);
      expect(left.rows).toEqual([{ key: 'q:a', state: 'claimed' }]);
    } finally {
      await pool.end();
      for (const s of stores) await s.close();
    }
  });

  it.each([
    ['a claim that takes it over', (store: PostgresIdempotencyStore) => store.claim('q:x', 'late', 60_000)],
    ['a handled record written over it', (store: PostgresIdempotencyStore) => store.markHandled('q:x', 60_000)],
  ])('a cleanup that waits on an expired row left live by %s does not delete it', async (_, write) => {
    const table = uniqueSpace();
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 3 });
    const tx = await pool.connect();
    // The writer's statements run in an open transaction on `tx` once `held` is set: its row lock is held until COMMIT.
    let held = false;
    const writer = new PostgresIdempotencyStore({ pool: { query: (text, values) => (held ? tx : pool).query(text, values), end: async () => undefined }, table, cleanupInterval: 0 }); // prettier-ignore
    const cleaner = new PostgresIdempotencyStore({ pool, table, cleanupInterval: 0 });
    try {
      await cleaner.purgeExpired(); // creates the table: each store's first use runs its migration before any lock is held
      await writer.claim('q:x', 'first', 1); // expires at once
      await waitFor(async () => (await pool.query(`SELECT 1 FROM "${table}" WHERE expires_at <= clock_timestamp()`)).rowCount === 1, 'the claim expired', 5_000); // prettier-ignore
      await tx.query('BEGIN');
      held = true;
      await write(writer);
      const purge = cleaner.purgeExpired();
      await waitFor(
        async () => (await pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`, [`DELETE FROM "${table}"%`])).rowCount === 1, // prettier-ignore
        'the cleanup waiting on the row lock',
        5_000,
      );
      await tx.query('COMMIT');
      held = false;
      expect(await purge).toBe(0);
      expect((await pool.query(`SELECT key FROM "${table}" WHERE expires_at > clock_timestamp()`)).rows).toEqual([{ key: 'q:x' }]);
      expect(await cleaner.claim('q:x', 'copy', 60_000)).not.toBe('claimed');
    } finally {
      if (held) await tx.query('ROLLBACK').catch(() => undefined);
      tx.release();
      await cleaner.close();
      await writer.close();
      await pool.query(`DROP TABLE IF EXISTS "${table}"`);
      await pool.end();
    }
  });

  it('reads only the expired rows through the expires_at index at each cleanup, not every live row', async () => {
    const table = uniqueSpace();
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
    const deletes: string[] = [];
    const recording = { query: (text: string, values?: unknown[]) => (/^\s*DELETE/.test(text) && deletes.push(text), pool.query(text, values)), end: async () => undefined }; // prettier-ignore
    const store = new PostgresIdempotencyStore({ pool: recording, table, cleanupInterval: 0 });
    try {
      await store.claim('q:live', 't', 60_000); // creates the table
      await pool.query(
        `INSERT INTO "${table}" (key, state, token, expires_at) SELECT 'q:live-' || g, 'handled', NULL, clock_timestamp() + interval '1 day' FROM generate_series(1, 100000) g`,
      );
      await pool.query(`ANALYZE "${table}"`);
      expect(await store.purgeExpired()).toBe(0);
      expect(deletes).toHaveLength(1);
      const plan = (await pool.query(`EXPLAIN ${deletes[0]}`)).rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Index (Only )?Scan using \S*expires_at_idx/);
      expect(plan).not.toMatch(/Seq Scan/);
    } finally {
      await store.close();
      await pool.query(`DROP TABLE IF EXISTS "${table}"`);
      await pool.end();
    }
  });

  it('deletes every expired row each cleanup, batch after batch, not 1,000 an interval', async () => {
    const table = uniqueSpace();
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
    const store = new PostgresIdempotencyStore({ pool, table, cleanupInterval: '2s' });
    const count = async () => Number((await pool.query(`SELECT count(*) AS n FROM "${table}"`)).rows[0].n);
    try {
      await store.claim('q:live', 't', 60_000); // creates the table and arms the cleanup
      await pool.query(
        `INSERT INTO "${table}" (key, state, token, expires_at) SELECT 'q:old-' || g, 'handled', NULL, clock_timestamp() - interval '1 minute' FROM generate_series(1, 3500) g`,
      );
      await waitFor(async () => (await count()) < 3_501, 'a first cleanup', 5_000);
      // The rest goes in the same cleanup, well before the next interval.
      await waitFor(async () => (await count()) === 1, 'every expired row deleted', 1_000);
      expect((await pool.query(`SELECT key FROM "${table}"`)).rows).toEqual([{ key: 'q:live' }]);
    } finally {
      await store.close();
      await pool.query(`DROP TABLE IF EXISTS "${table}"`);
      await pool.end();
    }
  });
});

describe('the PostgreSQL store on a table created by its migration (createTables: false)', () => {
  const asRole = (role: string) => {
    const url = new URL(POSTGRES_URL);
    url.username = role;
    return url.toString();
  };

  it('a role with only SELECT, INSERT, UPDATE and DELETE on the table claims, records and cleans up', async () => {
    const schema = uniqueSpace();
    const role = `${schema}_app`;
    const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
    const stores: PostgresIdempotencyStore[] = [];
    const create = (createTables?: boolean) => {
      const store = new PostgresIdempotencyStore({ connectionString: asRole(role), schema, createTables, cleanupInterval: 0 });
      stores.push(store);
      return store;
    };
    try {
      await admin.query(`CREATE ROLE "${role}" LOGIN`);
      for (const statement of new PostgresIdempotencyStore({ pool: admin, schema }).migration()) await admin.query(statement);
      await admin.query(`GRANT USAGE ON SCHEMA "${schema}" TO "${role}"`);
      await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON "${schema}"."amqp_retry_idempotency" TO "${role}"`);
      // The default runs the DDL, which PostgreSQL refuses to this role although every object exists.
      await expect(create().claim('q:a', 't', 60_000)).rejects.toThrow(/permission denied/);
      const store = create(false);
      expect(await store.claim('q:a', 't', 60_000)).toBe('claimed');
      expect(await store.claim('q:a', 'u', 60_000)).toBe('busy');
      await store.markHandled('q:a', 60_000);
      expect(await store.claim('q:a', 'u', 60_000)).toBe('handled');
      await store.markHandled('q:gone', 1);
      await waitFor(async () => (await store.purgeExpired()) === 1 || undefined, 'the expired record purged', 5_000);
      expect((await admin.query(`SELECT key FROM "${schema}"."amqp_retry_idempotency"`)).rows).toEqual([{ key: 'q:a' }]);
    } finally {
      for (const store of stores) await store.close();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.query(`DROP ROLE IF EXISTS "${role}"`);
      await admin.end();
    }
  });

  it('a missing table fails the first use naming the option and migration(), and the store works once it is created', async () => {
    const table = uniqueSpace();
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
    const store = new PostgresIdempotencyStore({ pool, table, createTables: false, cleanupInterval: 0 });
    try {
      await expect(store.claim('q:a', 't', 60_000)).rejects.toThrow(`the table ${table} does not exist, and createTables is false: run the statements of the store's migration()`); // prettier-ignore
      expect((await pool.query('SELECT to_regclass($1) AS found', [table])).rows).toEqual([{ found: null }]);
      for (const statement of store.migration()) await pool.query(statement);
      expect(await store.claim('q:a', 't', 60_000)).toBe('claimed');
    } finally {
      await store.close();
      await pool.query(`DROP TABLE IF EXISTS "${table}"`);
      await pool.end();
    }
  });

  it('a table of another shape under the name fails the first use naming the missing columns', async () => {
    const table = uniqueSpace();
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
    const store = new PostgresIdempotencyStore({ pool, table, createTables: false, cleanupInterval: 0 });
    try {
      await pool.query(`CREATE TABLE "${table}" (key text PRIMARY KEY, state text)`);
      await expect(store.claim('q:a', 't', 60_000)).rejects.toThrow(
        `the table ${table} is not one of this library's: it lacks the columns token, expires_at`,
      );
    } finally {
      await store.close();
      await pool.query(`DROP TABLE IF EXISTS "${table}"`);
      await pool.end();
    }
  });
});
