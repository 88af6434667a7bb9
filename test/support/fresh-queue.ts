import { uniqueName, type TestBroker } from './broker.js';

interface Closable {
  close(): Promise<unknown>;
}

/**
 * Runs `body` on a new uuid-named queue. What it starts and hands to `own` is closed afterwards, then the queue's
 * retry topology deleted, also when the body failed.
 */
export async function onFreshQueue(
  broker: TestBroker,
  prefix: string,
  body: (queue: string, own: <T extends Closable>(started: T) => T) => Promise<void>,
): Promise<void> {
  const queue = uniqueName(prefix);
  const owned: Closable[] = [];
  try {
    await body(queue, (started) => (owned.push(started), started));
  } finally {
    for (const started of owned.reverse()) await started.close();
    await broker.deleteRetryTopology(queue);
  }
}
