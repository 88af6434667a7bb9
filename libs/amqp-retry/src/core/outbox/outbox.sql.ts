import { DDL_LOCK_SQL } from '../sql/ddl.lock.js';
import { indexName, notifyChannel, qualifiedName } from '../sql/sql-identifier.reader.js';

/** The tables' names, read by readSqlIdentifier (safe to put into SQL text). */
export interface OutboxTableNames {
  /** The outbox table; with the schema, the NOTIFY channel (notifyChannel). */
  table: string;
  inboxTable: string;
  schema?: string;
}

const OUTBOX_COLUMNS: readonly string[] = [
  'id', 'exchange', 'routing_key', 'body', 'properties', 'order_key', 'delay_ms', 'state', 'attempts', 'last_error', 'created_at', 'available_at', 'sent_at',
]; // prettier-ignore
const INBOX_COLUMNS: readonly string[] = ['queue', 'message_id', 'handled_at'];

/** The setting, local to a transaction, by which the outbox's insert knows it runs in the caller's transaction block. */
const WRITE_MARK = 'amqp_retry.outbox_write';

/** Rows deleted per cleanup statement, each in a transaction of its own: a cleanup never holds many locks for long. */
export const CLEANUP_BATCH = 1_000;

/** Every statement of the outbox and the inbox, as pure text; `$n` are bind parameters. */
export function outboxSql({ table, inboxTable, schema }: OutboxTableNames) {
  const t = qualifiedName(table, schema);
  const inbox = qualifiedName(inboxTable, schema);
  const [pendingIdx, orderIdx, sentIdx, parkedIdx] = ['pending_idx', 'order_idx', 'sent_idx', 'parked_idx'].map((suffix) => indexName(table, suffix));
  const [handledAtIdx, queueHandledAtIdx] = ['handled_at_idx', 'queue_handled_at_idx'].map((suffix) => indexName(inboxTable, suffix));
  const channel = notifyChannel(table, schema);
  return {
    /** The NOTIFY channel the insert notifies and the relay listens on: `<schema>.<table>`, or the table's name. */
    channel,
    /** The tables' quoted names. */
    outboxName: t,
    inboxName: inbox,
    /** The outbox's DDL, idempotent; run under `ddlLock` in one transaction (or by the user as a migration). */
    outboxTables: [
      ...(schema === undefined ? [] : [`CREATE SCHEMA IF NOT EXISTS "${schema}"`]),
      `CREATE TABLE IF NOT EXISTS ${t} (
  id bigserial PRIMARY KEY,
  exchange text NOT NULL,
  routing_key text NOT NULL,
  body bytea NOT NULL,
  properties jsonb NOT NULL DEFAULT '{}',
  order_key text,
  delay_ms bigint NOT NULL DEFAULT 0,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'parked')),
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  available_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  sent_at timestamptz
)`,
      `CREATE INDEX IF NOT EXISTS "${pendingIdx}" ON ${t} (id) WHERE state = 'pending'`,
      `CREATE INDEX IF NOT EXISTS "${orderIdx}" ON ${t} (order_key, id) WHERE state = 'pending' AND order_key IS NOT NULL`,
      `CREATE INDEX IF NOT EXISTS "${sentIdx}" ON ${t} (sent_at) WHERE state = 'sent'`,
      `CREATE INDEX IF NOT EXISTS "${parkedIdx}" ON ${t} (id) WHERE state = 'parked'`,
    ],
    /** What the start checks of an existing outbox table: the columns the statements use, and the indexes above. */
    outboxShape: { columns: OUTBOX_COLUMNS, indexes: [pendingIdx, orderIdx, sentIdx] },
    /** The inbox's DDL, idempotent. */
    inboxTables: [
      ...(schema === undefined ? [] : [`CREATE SCHEMA IF NOT EXISTS "${schema}"`]),
      `CREATE TABLE IF NOT EXISTS ${inbox} (
  queue text NOT NULL,
  message_id text NOT NULL,
  handled_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (queue, message_id)
)`,
      `CREATE INDEX IF NOT EXISTS "${handledAtIdx}" ON ${inbox} (handled_at)`,
      `CREATE INDEX IF NOT EXISTS "${queueHandledAtIdx}" ON ${inbox} (queue, handled_at)`,
    ],
    /**
     * What the start checks of an existing inbox table. Not `_queue_handled_at_idx`, which tables created before it
     * lack (migrations/002): without it, a cleanup of a queue whose table other queues share may read the whole table.
     */
    inboxShape: { columns: INBOX_COLUMNS, indexes: [handledAtIdx] },
    /** $1 = a table's quoted name: its columns and the names of its indexes (empty when it does not exist). */
    tableShape: `SELECT ARRAY(SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped) AS columns,
  ARRAY(SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass($1)) AS indexes`,
    ddlLock: DDL_LOCK_SQL,
    /** Run before the insert: a write in no transaction block (each statement its own transaction) finds no mark, adds no row. */
    writeMark: `SELECT set_config('${WRITE_MARK}', 'on', true)`,
    /** As writeMark, and serialises the writers of order key $1, so that its rows' ids follow commit order. */
    writeMarkAndOrderLock: `SELECT set_config('${WRITE_MARK}', 'on', true), pg_advisory_xact_lock(hashtextextended($1, 0))`,
    /** Writes a row (only after writeMark) and wakes the relays at commit; returns its id. */
    insert: `WITH row AS (
  INSERT INTO ${t} (exchange, routing_key, body, properties, order_key, delay_ms)
  SELECT $1::text, $2::text, $3::bytea, $4::jsonb, $5::text, $6::bigint WHERE current_setting('${WRITE_MARK}', true) = 'on' RETURNING id
) SELECT id::text AS id, pg_notify('${channel}', '') FROM row`,
    /** Claims and locks up to $1 due rows; a row with an order key only when no earlier row of its key is pending. */
    claim: `SELECT o.id::text AS id, o.exchange, o.routing_key, o.body, o.properties, o.order_key, o.attempts, o.last_error,
  GREATEST(0, o.delay_ms - floor(extract(epoch FROM clock_timestamp() - o.created_at) * 1000))::bigint::text AS remaining_delay_ms,
  floor(extract(epoch FROM clock_timestamp() - o.created_at) * 1000)::bigint::text AS age_ms
FROM ${t} o
WHERE o.state = 'pending' AND o.available_at <= clock_timestamp()
  AND (o.order_key IS NULL OR NOT EXISTS (
    SELECT 1 FROM ${t} p WHERE p.state = 'pending' AND p.order_key = o.order_key AND p.id < o.id))
ORDER BY o.id
LIMIT $1
FOR UPDATE OF o SKIP LOCKED`,
    /** $1 = ids (text[]). */
    markSent: `UPDATE ${t} SET state = 'sent', sent_at = clock_timestamp(), attempts = attempts + 1, last_error = NULL WHERE id = ANY($1::bigint[])`,
    /** $1 = ids, $2 = attempts, $3 = waits in ms, $4 = errors (arrays of one length). */
    reschedule: `UPDATE ${t} AS o SET attempts = u.attempts, last_error = u.error,
  available_at = clock_timestamp() + u.wait_ms * interval '1 millisecond'
FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::text[]) AS u(id, attempts, wait_ms, error) WHERE o.id = u.id`,
    /** $1 = ids, $2 = attempts, $3 = reasons. */
    park: `UPDATE ${t} AS o SET state = 'parked', attempts = u.attempts, last_error = u.reason
FROM unnest($1::bigint[], $2::int[], $3::text[]) AS u(id, attempts, reason) WHERE o.id = u.id`,
    /**
     * Deletes up to CLEANUP_BATCH rows sent more than $1 ms before the transaction's start; answers how many (`deleted`).
     * The cutoff is `now()`, stable within the statement, so PostgreSQL reads `_sent_idx` from its start to the cutoff
     * (`clock_timestamp()`, volatile, cannot bound an index scan: every sent row kept would be read). The delete finds
     * the rows by their `ctid`s (a TID scan), never by a join the planner may make with a scan of the whole table.
     */
    cleanup: `WITH gone AS (DELETE FROM ${t} WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM ${t} WHERE state = 'sent' AND sent_at < now() - $1 * interval '1 millisecond' LIMIT ${CLEANUP_BATCH})) RETURNING 1)
SELECT count(*)::int AS deleted FROM gone`,
    /**
     * The backlog: rows waiting, the oldest one's age, rows parked; and the table's size on disk. Each part reads its
     * partial index only: the sent rows kept for their retention (millions) are never scanned.
     */
    stats: `SELECT (SELECT count(*) FROM ${t} WHERE state = 'pending')::text AS waiting,
  COALESCE(floor(extract(epoch FROM clock_timestamp() - (SELECT min(created_at) FROM ${t} WHERE state = 'pending')) * 1000), 0)::bigint::text AS oldest_ms,
  (SELECT count(*) FROM ${t} WHERE state = 'parked')::text AS parked,
  pg_total_relation_size('${t}'::regclass)::text AS table_bytes`,
    /** Records ($1 queue, $2 message id) as handled; no row back when it already was (or is being, by a transaction that then commits). */
    inboxRecord: `INSERT INTO ${inbox} (queue, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING 1 AS recorded`,
    /**
     * Deletes up to CLEANUP_BATCH inbox rows of queue $2 handled more than $1 ms before the transaction's start; answers
     * how many (`deleted`). Each queue keeps its records for its own retention: handlers (and applications) with others
     * may share the table. The cutoff is `now()`, and the condition on it a row comparison, which only
     * `_queue_handled_at_idx` can bound: the scan reads this queue's records past the cutoff, not the other queues'
     * records before it, kept for longer retentions. (As `queue = $2 AND handled_at < ...`, PostgreSQL counts on
     * finding the batch early in a scan of the whole table, or reads `_handled_at_idx` and filters the other queues'
     * records out.) The delete finds the rows by their `ctid`s, as the outbox's cleanup.
     */
    inboxCleanup: `WITH gone AS (DELETE FROM ${inbox} WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM ${inbox} WHERE queue = $2 AND (queue, handled_at) < ($2, now() - $1 * interval '1 millisecond') LIMIT ${CLEANUP_BATCH})) RETURNING 1)
SELECT count(*)::int AS deleted FROM gone`,
  };
}

export type OutboxStatements = ReturnType<typeof outboxSql>;

/** The migration file's text for these names: what the library would run at start-up, to run yourself instead. */
export function migrationScript(names: OutboxTableNames): string {
  const sql = outboxSql(names);
  return [
    'BEGIN;',
    `${sql.ddlLock};`,
    ...[...sql.outboxTables, ...sql.inboxTables.filter((s) => !s.startsWith('CREATE SCHEMA'))].map((s) => `${s};`),
    'COMMIT;',
    '',
  ].join('\n');
}
