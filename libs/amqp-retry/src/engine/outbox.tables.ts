import type { OutboxAdapter } from '../core/outbox/outbox.adapter.js';
import type { OutboxStatements } from '../core/outbox/outbox.sql.js';

/** A table the start makes sure of: its DDL, and what it must have. */
export interface TableSpec {
  /** The quoted, qualified name (SQL). */
  qualified: string;
  /** The name as the user wrote it, for messages. */
  shown: string;
  /** The option that names it, e.g. 'outbox.table'. */
  option: string;
  /** Its DDL (CREATE TABLE, then CREATE INDEX), run when createTables is on; undefined when it is off. */
  create?: readonly string[];
  shape: { columns: readonly string[]; indexes: readonly string[] };
}

/**
 * Makes sure of a table at start-up: creates it if missing (createTables on), then checks its columns and indexes
 * (CREATE INDEX IF NOT EXISTS silently skips an index whose name another one took). One transaction under the DDL
 * lock (pg_advisory_xact_lock): two CREATE TABLE IF NOT EXISTS racing on the row type fail with "duplicate key value
 * violates unique constraint pg_type_typname_nsp_index".
 */
export async function prepareTable(adapter: OutboxAdapter, sql: Pick<OutboxStatements, 'ddlLock' | 'tableShape'>, spec: TableSpec): Promise<void> {
  await adapter.transaction(async (tx) => {
    const shape = async () => {
      const { rows } = await adapter.execute(tx, sql.tableShape, [spec.qualified]);
      return { columns: textArray(rows[0]?.columns), indexes: textArray(rows[0]?.indexes) };
    };
    if (spec.create) {
      await adapter.execute(tx, sql.ddlLock, []);
      for (const statement of spec.create.filter((s) => !s.startsWith('CREATE INDEX'))) await adapter.execute(tx, statement, []);
    }
    const found = await shape();
    if (found.columns.length === 0) {
      throw new Error(
        `The table ${spec.shown} does not exist, and createTables is false: run libs/amqp-retry/migrations/001_outbox_inbox.sql and the files after it (or outboxMigration() for other names), or set createTables: true`,
      );
    }
    const lacking = spec.shape.columns.filter((column) => !found.columns.includes(column));
    if (lacking.length > 0) {
      throw new Error(
        `The table ${spec.shown} (option ${spec.option}) is not one of this library's: it lacks the column${lacking.length === 1 ? '' : 's'} ${lacking.join(', ')}. Give ${spec.option} the name of a table of the library's own (created at start-up, or by outboxMigration()), or rename the table that has this name.`,
      );
    }
    if (spec.create) for (const statement of spec.create.filter((s) => s.startsWith('CREATE INDEX'))) await adapter.execute(tx, statement, []);
    const indexes = spec.create ? (await shape()).indexes : found.indexes;
    const missing = spec.shape.indexes.filter((name) => !indexes.includes(name));
    if (missing.length > 0) {
      throw new Error(
        `The table ${spec.shown} (option ${spec.option}) lacks the index${missing.length === 1 ? '' : 'es'} ${missing.join(', ')}, which the library needs (without them every relay round and cleanup scans the table): run the CREATE INDEX statements of outboxMigration() for these names, or set createTables: true`,
      );
    }
  });
}

/** A text[] as the driver hands it: an array, or PostgreSQL's text form '{a,b}'. */
function textArray(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String);
  if (typeof value !== 'string' || !value.startsWith('{')) return [];
  const parts = value.slice(1, -1).split(',');
  return parts.filter((part) => part !== '').map((part) => part.replace(/^"|"$/g, ''));
}
