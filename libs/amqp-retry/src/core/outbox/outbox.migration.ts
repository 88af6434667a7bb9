import { readSqlIdentifier } from '../sql/sql-identifier.reader.js';
import { DEFAULT_INBOX_TABLE, DEFAULT_OUTBOX_TABLE } from './outbox.config.js';
import { migrationScript } from './outbox.sql.js';

/**
 * The SQL that creates the outbox and inbox tables, for your migrations (with `createTables: false`); the defaults'
 * script ships as the files of libs/amqp-retry/migrations/, run in order. Idempotent: run again on tables it made
 * before, it adds the indexes they lack.
 * @example writeFileSync('migrations/042_outbox.sql', outboxMigration({ table: 'orders_outbox' }))
 */
export function outboxMigration(names: { table?: string; inboxTable?: string; schema?: string } = {}): string {
  const key = (option: string) => `outboxMigration option "${option}"`;
  return migrationScript({
    table: names.table === undefined ? DEFAULT_OUTBOX_TABLE : readSqlIdentifier(names.table, key('table')),
    inboxTable: names.inboxTable === undefined ? DEFAULT_INBOX_TABLE : readSqlIdentifier(names.inboxTable, key('inboxTable')),
    schema: names.schema === undefined ? undefined : readSqlIdentifier(names.schema, key('schema')),
  });
}
