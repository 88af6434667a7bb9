import { cleanUpInBatches } from './outbox.cleanup.js';
import { CLEANUP_BATCH } from './outbox.sql.js';

describe('cleanUpInBatches', () => {
  it('deletes batch after batch until one is not full', async () => {
    let left = 3 * CLEANUP_BATCH + 10;
    const batch = async () => {
      const deleted = Math.min(left, CLEANUP_BATCH);
      left -= deleted;
      return deleted;
    };
    expect(await cleanUpInBatches(batch)).toBe(true);
    expect(left).toBe(0);
  });

  it('stops when its time is up, saying it is not done', async () => {
    let clock = 0;
    let batches = 0;
    const full = async () => (batches++, (clock += 200), CLEANUP_BATCH);
    expect(await cleanUpInBatches(full, 500, () => clock)).toBe(false);
    expect(batches).toBe(3);
  });
});
