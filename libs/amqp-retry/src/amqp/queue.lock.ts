import { type ChannelOpener, onOwnChannel } from './queue-exists.probe.js';
import { isHeldElsewhere, REGISTRY_LOCK_RETRY_MS, REGISTRY_LOCK_WAIT_MS } from '../core/topology/handler-registry.record.js';
import { PRIVATE_QUEUE_OPTIONS } from '../core/topology/queue-type.mismatch.js';
import { sleep } from '../core/time/duration.timer.js';

/**
 * Runs `work` while this connection holds the lock `lockQueue` (an exclusive queue, declared for the time of `work`),
 * so that no other process reads and rewrites the same queue of records at the same moment: one reading it whole and
 * unacked hides the records from the other. Waits up to REGISTRY_LOCK_WAIT_MS for another holder, then works without
 * the lock, as does a user not allowed to declare it. Within one connection the lock excludes nothing.
 */
export async function withQueueLock<T>(open: ChannelOpener, lockQueue: string, work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + REGISTRY_LOCK_WAIT_MS;
  let held = false;
  for (;;) {
    const channel = await open();
    try {
      await channel.assertQueue(lockQueue, { ...PRIVATE_QUEUE_OPTIONS });
      held = true;
      await channel.close().catch(() => undefined);
      break;
    } catch (error) {
      // the broker closed the channel; held elsewhere: wait for its holder to end, else (403, other) go without the lock
      if (!isHeldElsewhere(error) || Date.now() >= deadline) break;
      await sleep(REGISTRY_LOCK_RETRY_MS);
    }
  }
  try {
    return await work();
  } finally {
    // A failure: the connection is gone, and the exclusive queue with it.
    if (held) await onOwnChannel(open, (channel) => channel.deleteQueue(lockQueue)).catch(() => undefined);
  }
}
