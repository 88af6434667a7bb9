import { CLEANUP_BATCH } from './outbox.sql.js';

/**
 * Runs cleanup batches (at most CLEANUP_BATCH rows each) until one deletes fewer, or `budgetMs` has passed; resolves
 * with whether it is done.
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
