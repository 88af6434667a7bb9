/**
 * The library's DDL lock: every CREATE it runs (the outbox, the inbox, the idempotency store) takes this transaction
 * lock first, so that instances starting at once take turns instead of racing on PostgreSQL's catalog (two CREATE
 * TABLE IF NOT EXISTS at once can fail with a duplicate key on pg_type_typname_nsp_index).
 */
export const DDL_LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtextextended('nestjs-amqp-retry ddl', 0))`;
