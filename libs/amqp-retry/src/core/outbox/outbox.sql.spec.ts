import { readdirSync, readFileSync } from 'node:fs';
import { DEFAULT_INBOX_TABLE, DEFAULT_OUTBOX_TABLE } from './outbox.config.js';
import { outboxMigration } from './outbox.migration.js';
import { notifyChannel } from '../sql/sql-identifier.reader.js';
import { migrationScript, outboxSql } from './outbox.sql.js';

describe('outboxSql', () => {
  const sql = outboxSql({ table: 'orders_outbox', inboxTable: 'orders_inbox', schema: 'billing' });

  it('quotes the names it was given, schema first, everywhere', () => {
    for (const statement of [sql.insert, sql.claim, sql.markSent, sql.reschedule, sql.park, sql.cleanup, sql.stats]) {
      expect(statement).toContain('"billing"."orders_outbox"');
      expect(statement).not.toMatch(/FROM orders_outbox|INTO orders_outbox/);
    }
    expect(sql.inboxRecord).toContain('"billing"."orders_inbox"');
    expect(sql.outboxTables[0]).toBe('CREATE SCHEMA IF NOT EXISTS "billing"');
  });

  it('notifies on the schema and table name, within the insert (delivered at commit only)', () => {
    expect(sql.channel).toBe('billing.orders_outbox');
    expect(sql.insert).toMatch(/INSERT INTO "billing"."orders_outbox"[\s\S]*pg_notify\('billing\.orders_outbox', ''\)/);
    const plain = outboxSql({ table: 'orders_outbox', inboxTable: 'orders_inbox' });
    expect(plain.channel).toBe('orders_outbox');
    expect(plain.insert).toContain("pg_notify('orders_outbox', '')");
    const long = outboxSql({ table: 'o'.repeat(63), inboxTable: 'i', schema: 's'.repeat(63) });
    expect(long.channel).toBe(notifyChannel('o'.repeat(63), 's'.repeat(63)));
    expect(long.insert).toContain(`pg_notify('${long.channel}', '')`);
  });

  it('claims due rows in id order, skipping rows other relays hold, one row at a time per order key', () => {
    expect(sql.claim).toMatch(/ORDER BY o\.id\s+LIMIT \$1\s+FOR UPDATE OF o SKIP LOCKED$/);
    expect(sql.claim).toContain("o.state = 'pending' AND o.available_at <= clock_timestamp()");
    expect(sql.claim).toContain("p.state = 'pending' AND p.order_key = o.order_key AND p.id < o.id");
  });

  it('bounds cleanups, each batch answering how many it deleted', () => {
    expect(sql.cleanup).toMatch(/LIMIT 1000\)\) RETURNING 1\)\nSELECT count\(\*\)::int AS deleted FROM gone$/);
    expect(sql.inboxCleanup).toMatch(/LIMIT 1000\)\) RETURNING 1\)\nSELECT count\(\*\)::int AS deleted FROM gone$/);
  });

  it('takes the DDL lock inside the migration, which is idempotent', () => {
    const script = migrationScript({ table: 't', inboxTable: 'i' });
    expect(script.split('\n').slice(0, 2)).toEqual(['BEGIN;', "SELECT pg_advisory_xact_lock(hashtextextended('nestjs-amqp-retry ddl', 0));"]);
    expect(script.trim().endsWith('COMMIT;')).toBe(true);
    expect(script.match(/CREATE (TABLE|INDEX) IF NOT EXISTS/g)).toHaveLength(8);
    expect(script).not.toMatch(/CREATE (TABLE|INDEX) (?!IF NOT EXISTS)/);
  });

  it('the shipped migration files, run in order, are the script for the default names, each a transaction under the DDL lock', () => {
    const dir = new URL('../../../migrations/', import.meta.url);
    const files = readdirSync(dir)
      .filter((name) => name.endsWith('.sql'))
      .sort();
    expect(files).toEqual(['001_outbox_inbox.sql', '002_inbox_queue_handled_at.sql']);
    const script = migrationScript({ table: DEFAULT_OUTBOX_TABLE, inboxTable: DEFAULT_INBOX_TABLE });
    const [begin, lock] = script.split('\n');
    const statements = (text: string) => text.split(/;\n/).filter((statement) => statement.trim() !== '');
    const bodies = files.map((name) => readFileSync(new URL(name, dir), 'utf8').replace(/^--.*\n/gm, ''));
    for (const body of bodies) {
      expect(body.split('\n').slice(0, 2)).toEqual([begin, lock]);
      expect(body.endsWith('COMMIT;\n')).toBe(true);
    }
    const made = bodies.flatMap((body) => statements(body).slice(2, -1));
    expect(made).toEqual(statements(script).slice(2, -1));
  });

  it('outboxMigration gives the script for chosen names, and refuses hostile ones', () => {
    expect(outboxMigration()).toBe(migrationScript({ table: DEFAULT_OUTBOX_TABLE, inboxTable: DEFAULT_INBOX_TABLE }));
    expect(outboxMigration({ table: 'o', schema: 's' })).toContain('CREATE TABLE IF NOT EXISTS "s"."o"');
    expect(() => outboxMigration({ table: 'o"; DROP TABLE x; --' })).toThrow(/outboxMigration option "table" is/);
  });
});
