// What the examples share for their smoke runs (EXAMPLE_SMOKE=1, as scripts/test-consumers.sh runs them): unique
// names, waiting with a deadline, checks that say what differed, and removing what a run declared. An application
// copied from an example does not need this file: drop the `if (SMOKE)` branch of its main.ts with it.
import { deepStrictEqual } from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import amqp from 'amqplib';
import { retryTopologyNames, type RetryTopologyNamesOptions } from 'nestjs-amqp-retry';

/** EXAMPLE_SMOKE=1: run the example's flow once, check it, delete what it declared and exit. */
export const SMOKE = process.env.EXAMPLE_SMOKE === '1';

export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** Appended to every broker name of a smoke run (`.1a2b3c4d`), so that runs never meet; empty otherwise. */
export const suffix = SMOKE ? `.${randomUUID().slice(0, 8)}` : '';

/** Polls `probe` every 25 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function waitFor(probe: () => boolean | Promise<boolean>, what: string, timeoutMs = 8_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Throws, showing both values, unless `actual` deep-equals `expected`. */
export function expectEqual<T>(actual: T, expected: T, what: string): void {
  deepStrictEqual(actual, expected, `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

/** Deletes the queues and exchanges the library declared for handler `queue` (and `exchange`, when given). */
export async function deleteHandlerTopology(
  channel: amqp.Channel,
  queue: string,
  options: RetryTopologyNamesOptions & { exchange?: string } = {},
): Promise<void> {
  const names = retryTopologyNames(queue, options);
  for (const name of names.queues) await channel.deleteQueue(name);
  for (const name of [...names.exchanges, ...(options.exchange ? [options.exchange] : [])]) await channel.deleteExchange(name);
}

/**
 * Runs a smoke flow: prints `<name>: ok` and exits 0, or prints what failed and exits 1. `cleanUp` runs either way,
 * on a connection of its own; a failure there fails the run too. A run that outlives `limitMs` is cut short.
 */
export async function smokeRun(name: string, flow: () => Promise<void>, cleanUp: (channel: amqp.Channel) => Promise<void>, limitMs = 20_000) {
  const timer = setTimeout(() => {
    console.error(`${name}: FAILED: still running after ${limitMs} ms`);
    process.exit(1);
  }, limitMs);
  let failed = false;
  try {
    await flow();
  } catch (error) {
    failed = true;
    console.error(`${name}: FAILED:`, error instanceof Error ? error.message : error);
  }
  try {
    const connection = await amqp.connect(AMQP_URL);
    await cleanUp(await connection.createChannel());
    await connection.close();
  } catch (error) {
    failed = true;
    console.error(`${name}: cleaning up FAILED:`, error instanceof Error ? error.message : error);
  }
  clearTimeout(timer);
  if (!failed) console.log(`${name}: ok`);
  process.exit(failed ? 1 : 0);
}
