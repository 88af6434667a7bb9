-- nestjs-amqp-retry: the outbox and inbox tables with their default names (docs/outbox.md).
-- Run it yourself and set createTables: false, or let the library run the same statements at start-up.
-- Other names or a schema: outboxMigration({ table, inboxTable, schema }) prints the script for them.
BEGIN;
SELECT pg_advisory_xact_lock(hashtextextended('nestjs-amqp-retry ddl', 0));
CREATE TABLE IF NOT EXISTS "amqp_retry_outbox" (
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
);
CREATE INDEX IF NOT EXISTS "amqp_retry_outbox_pending_idx" ON "amqp_retry_outbox" (id) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS "amqp_retry_outbox_order_idx" ON "amqp_retry_outbox" (order_key, id) WHERE state = 'pending' AND order_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS "amqp_retry_outbox_sent_idx" ON "amqp_retry_outbox" (sent_at) WHERE state = 'sent';
CREATE INDEX IF NOT EXISTS "amqp_retry_outbox_parked_idx" ON "amqp_retry_outbox" (id) WHERE state = 'parked';
CREATE TABLE IF NOT EXISTS "amqp_retry_inbox" (
  queue text NOT NULL,
  message_id text NOT NULL,
  handled_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (queue, message_id)
);
CREATE INDEX IF NOT EXISTS "amqp_retry_inbox_handled_at_idx" ON "amqp_retry_inbox" (handled_at);
COMMIT;
