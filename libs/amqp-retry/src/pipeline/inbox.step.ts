import type { Middleware } from './delivery.contracts.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { requireMessageKey } from '../core/message/message-key.reader.js';
import type { InboxConfig } from '../core/outbox/outbox.config.js';
import { cleanUpInBatches } from '../core/outbox/outbox.cleanup.js';
import { abortedTransactionError, IN_FAILED_SQL_TRANSACTION } from '../core/outbox/aborted-transaction.js';
import type { RetryContext } from '../core/delivery/retry.context.js';
import type { RetryLogger } from '../core/observe/retry.logger.js';

/**
 * The probe after the handler failed. In an aborted transaction (a failure the handler caught), which would commit
 * nothing, it says so; any other failure (a connection lost) is thrown as it is.
 */
function failAborted(error: unknown): never {
  if ((error as { code?: unknown } | null)?.code !== IN_FAILED_SQL_TRANSACTION) throw error;
  throw abortedTransactionError(error);
}

/** How often (at most) a queue's inbox deletes ids past their retention, after a handled message. */
const CLEANUP_EVERY_MS = 60_000;

/**
 * The transactional inbox: records the message's id and runs the handler in one transaction (`context.transaction`),
 * committed before the ack, so the handler's writes and the record commit together or not at all. A copy whose id is
 * recorded is acked without running (the INSERT answers no row); a second copy at once waits on the first's row.
 */
export const inboxStep =
  (queue: string, config: InboxConfig, logger: RetryLogger): Middleware =>
  (invoke) => {
    const { adapter, sql } = config;
    let lastCleanupAt = Number.NEGATIVE_INFINITY;
    let cleaning = false;
    const batch = async () => {
      const { rows } = await adapter.transaction((tx) => adapter.execute(tx, sql.inboxCleanup, [config.retentionMs, queue]));
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
        const handled = await invoke(payload, { ...context, transaction: tx } as RetryContext);
        if (!adapter.refusesAbortedCommit) await adapter.execute(tx, 'SELECT 1', []).catch((error: unknown) => failAborted(error));
        return handled;
      });
      if (!ran) logger.debug(`"${queue}": "${id}" is in the inbox already; acking this copy without calling the handler`);
      else cleanup();
      return result;
    };
  };
