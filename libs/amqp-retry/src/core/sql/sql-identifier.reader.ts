import { RetryConfigError } from '../../errors/retry-config.error.js';
import { fnv1a } from '../text/fnv.hash.js';

/** A PostgreSQL identifier the library will quote into SQL: letters, digits and _, at most 63 bytes (NAMEDATALEN - 1). */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Reads a table or schema name given in options. Names are put into SQL text (a table cannot be a bind parameter), so
 * only plain identifiers are taken: a quote, a dot, a space or a semicolon is refused at start-up, naming the option.
 * @example readSqlIdentifier('orders_outbox', 'RetryModule option "outbox.table"') // 'orders_outbox'
 */
export function readSqlIdentifier(value: unknown, key: string): string {
  if (typeof value !== 'string' || !IDENTIFIER.test(value)) {
    throw new RetryConfigError(
      key,
      `is ${typeof value === 'string' ? JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value) : typeof value}`,
      'Use letters, digits and _ (at most 63), starting with a letter or _; give the schema apart (option "schema").',
    );
  }
  return value;
}

/** `"schema"."table"`, or `"table"` without a schema (the connection's search path). Both were read by readSqlIdentifier. */
export const qualifiedName = (table: string, schema?: string): string => (schema === undefined ? `"${table}"` : `"${schema}"."${table}"`);

/** PostgreSQL cuts longer identifiers to this many bytes (NAMEDATALEN - 1). */
const MAX_IDENTIFIER_BYTES = 63;

/**
 * The name of an index of `table`: `<table>_<suffix>` when that fits in 63 bytes; else the table's name cut short, with
 * a hash of the whole name, so that two long names never take the same cut name (CREATE INDEX IF NOT EXISTS would
 * skip the clash silently). `table` is ASCII (readSqlIdentifier), one byte a character.
 * @example indexName('orders_outbox', 'pending_idx') // 'orders_outbox_pending_idx'
 */
export function indexName(table: string, suffix: string): string {
  const plain = `${table}_${suffix}`;
  if (plain.length <= MAX_IDENTIFIER_BYTES) return plain;
  const hash = fnv1a(plain);
  return `${table.slice(0, MAX_IDENTIFIER_BYTES - suffix.length - hash.length - 2)}_${hash}_${suffix}`;
}
