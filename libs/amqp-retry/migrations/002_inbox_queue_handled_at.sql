-- nestjs-amqp-retry: the inbox's index on (queue, handled_at), for an inbox table made by 001_outbox_inbox.sql.
-- Each queue's cleanup reads its own records past its retention through it, when queues of other retentions share
-- the table. outboxMigration({ table, inboxTable, schema }) includes it for other names.
-- Building it holds the inbox's writes (a SHARE lock) for as long as the build takes, and so does the first start of
-- this version with createTables, which builds it the same way. On a large inbox, build it first without blocking:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS "amqp_retry_inbox_queue_handled_at_idx" ON "amqp_retry_inbox" (queue, handled_at);
-- (outside a transaction; if it fails, DROP INDEX the invalid index it leaves and run it again), then this file finds it.
BEGIN;
SELECT pg_advisory_xact_lock(hashtextextended('nestjs-amqp-retry ddl', 0));
CREATE INDEX IF NOT EXISTS "amqp_retry_inbox_queue_handled_at_idx" ON "amqp_retry_inbox" (queue, handled_at);
COMMIT;
