import { RetryConfigError } from '../../errors/retry-config.error.js';
import { fnv1a } from '../text/fnv.hash.js';

/** A PostgreSQL identifier the library will quote into SQL: letters, digits and _, at most 63 bytes (NAMEDATALEN - 1). */
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

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

/**
 * The NOTIFY channel of the outbox `table` in `schema`: `<schema>.<table>`, or the table's name without a schema, so
 * that outboxes of one name in different schemas wake only their own relays. A channel is an identifier of at most 63
 * bytes (`LISTEN` cuts a longer one, `pg_notify` refuses it): a longer name is cut short, with 8 hex digits of a hash
 * of the whole name, so that two long names never share a channel. The names are ASCII of letters, digits and `_`
 * (readSqlIdentifier): the channel goes into SQL text as it is, in double quotes (`LISTEN`) or single (`pg_notify`).
 * @example notifyChannel('orders_outbox', 'billing') // 'billing.orders_outbox'
 */
export function notifyChannel(table: string, schema?: string): string {
  const plain = schema === undefined ? table : `${schema}.${table}`;
  if (plain.length <= MAX_IDENTIFIER_BYTES) return plain;
  const hash = fnv1a(plain);
  return `${plain.slice(0, MAX_IDENTIFIER_BYTES - hash.length - 1)}_${hash}`;
}
