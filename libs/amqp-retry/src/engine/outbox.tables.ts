import type { OutboxAdapter } from '../core/outbox/outbox.adapter.js';
import type { OutboxStatements } from '../core/outbox/outbox.sql.js';

/**
 * Creates tables if missing, in one transaction under the library's DDL lock (pg_advisory_xact_lock): instances
 * starting at once take turns, so none fails with PostgreSQL's "duplicate key value violates unique constraint
 * pg_type_typname_nsp_index" (two CREATE TABLE IF NOT EXISTS racing on the table's row type).
 */
export async function createTables(adapter: OutboxAdapter, sql: Pick<OutboxStatements, 'ddlLock'>, statements: readonly string[]): Promise<void> {
  await adapter.transaction(async (tx) => {
    await adapter.execute(tx, sql.ddlLock, []);
    for (const statement of statements) await adapter.execute(tx, statement, []);
  });
}

/** With `createTables: false`: fails the start, naming the migration, when the table is missing. */
export async function assertTable(adapter: OutboxAdapter, qualified: string, shown: string): Promise<void> {
  const { rows } = await adapter.transaction((tx) => adapter.execute(tx, 'SELECT to_regclass($1)::text AS found', [qualified]));
  if (rows[0]?.found == null) {
    throw new Error(
      `The table ${shown} does not exist, and createTables is false: run libs/amqp-retry/migrations/001_outbox_inbox.sql (or outboxMigration() for other names), or set createTables: true`,
    );
  }
}
