import { CLEANUP_BATCH } from './outbox.sql.js';

/**
 * Runs cleanup batches (each deletes at most CLEANUP_BATCH rows, in a transaction of its own, and answers how many it
 * deleted) until one deletes fewer, or `budgetMs` has passed; resolves with whether it is done. So a cleanup keeps up
 * with any rate of rows (thousands a second per batch), and never holds locks on many rows at once.
 * @example const done = await cleanUpInBatches(() => deleteBatch(), 500)
 */
export async function cleanUpInBatches(deleteBatch: () => Promise<number>, budgetMs = Number.POSITIVE_INFINITY, now = Date.now): Promise<boolean> {
  const until = now() + budgetMs;
  for (;;) {
    const deleted = await deleteBatch();
    if (deleted < CLEANUP_BATCH) return true;
    if (now() >= until) return false;
  }
}
