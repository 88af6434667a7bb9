import type { Middleware } from './delivery.contracts.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { requireMessageKey } from '../core/message/message-key.reader.js';
import type { InboxConfig } from '../core/outbox/outbox.config.js';
import { cleanUpInBatches } from '../core/outbox/outbox.cleanup.js';
import type { RetryContext } from '../core/delivery/retry.context.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';

/**
 * How often (at most) a queue's inbox deletes ids past their retention, after a handled message (the first handled
 * message starts one): in batches of CLEANUP_BATCH, each in a transaction of its own, until done.
 */
const CLEANUP_EVERY_MS = 60_000;

/**
 * The transactional inbox as a step of the delivery pipeline: opens a transaction, records the message's id as
 * handled in it, runs the handler with the transaction in `context.transaction`, and commits; only then does the
 * pipeline ack. So the handler's writes and the record commit together or not at all:
 * - a copy whose id is recorded (a redelivery after a crash past the commit, a duplicate publish) finds the row and
 *   is acked without running: the record's INSERT answers no row;
 * - two copies at once: the second's INSERT waits on the first's uncommitted row, then finds it (first committed:
 *   acked without running) or takes it (first rolled back: runs);
 * - the handler throws, or the process dies before the commit: nothing was written, and the message is retried as
 *   usual (a throw) or redelivered (a crash).
 * A message without an id is parked as malformed: an inbox cannot tell its copies apart.
 */
export const inboxStep =
  (queue: string, config: InboxConfig, logger: RetryLogger): Middleware =>
  (invoke) => {
    const { adapter, sql } = config;
    let lastCleanupAt = Number.NEGATIVE_INFINITY;
    let cleaning = false;
    const batch = async () => {
      const { rows } = await adapter.transaction((tx) => adapter.execute(tx, sql.inboxCleanup, [config.retentionMs]));
      return Number(rows[0]?.deleted ?? 0);
    };
    const cleanup = () => {
      if (cleaning || Date.now() - lastCleanupAt < CLEANUP_EVERY_MS) return;
      lastCleanupAt = Date.now();
      cleaning = true;
      cleanUpInBatches(batch)
        .catch((error: unknown) => logger.warn(`"${queue}": could not clean up the inbox ${config.tableName} (${errorMessage(error)})`))
        .finally(() => (cleaning = false));
    };
    return async (payload, context) => {
      const id = requireMessageKey(
        config.key,
        payload,
        context.message,
        'inbox key',
        config.keyIsMessageId
          ? 'the message has no message id, which the inbox needs to recognise its copies: publish with a messageId (OutboxPublisher and RetryPublisher set one), or give inbox.key'
          : 'the inbox key function returned undefined',
      );
      let ran = false;
      const result = await adapter.transaction(async (tx) => {
        const { rows } = await adapter.execute(tx, sql.inboxRecord, [queue, id]);
        if (rows.length === 0) return undefined; // recorded by an earlier copy, committed
        ran = true;
        return invoke(payload, { ...context, transaction: tx } as RetryContext);
      });
      if (!ran) logger.debug(`"${queue}": "${id}" is in the inbox already; acking this copy without calling the handler`);
      else cleanup();
      return result;
    };
  };
