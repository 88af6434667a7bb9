import type { ScenarioName } from '../settings.js';
import { settings } from '../settings.js';
import { BenchSession } from './bench-session.js';
import { consumeBacklog } from './runs.js';

/**
 * The body of a scenario file: runs `scenario` in this process with its own broker session and hands the result to
 * the runner over IPC (or prints it, when the file is run by hand). On SIGINT/SIGTERM it kills its measured
 * processes and deletes what they declared before exiting.
 */
export function runScenario<R>(name: ScenarioName, scenario: (session: BenchSession) => Promise<R>): void {
  void (async () => {
    const session = await BenchSession.open();
    const abort = (signal: NodeJS.Signals) => void session.abort().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    process.once('SIGINT', abort).once('SIGTERM', abort);
    try {
      const result = await scenario(session);
      if (process.send) await new Promise((resolve) => process.send?.(result, undefined, {}, resolve));
      else console.log(JSON.stringify(result, null, 2));
    } catch (error) {
      console.error(`${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      process.exitCode = 1;
    } finally {
      await session.close();
    }
    process.disconnect?.();
  })().catch((error: unknown) => {
    console.error(`${name} could not start: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  });
}

/**
 * One unreported raw run before a scenario's rounds, so that the first contender measured does not also pay for a
 * broker and page cache that the bench has just woken up.
 */
export async function warmUp(session: BenchSession): Promise<void> {
  await consumeBacklog(session, 'warm-up', 'raw', settings.warmUpMessages);
}

/** One progress line per measured run, so a long bench shows where it is. */
export function progress(name: ScenarioName, round: number, what: string): void {
  console.log(`${name.padEnd(10)}  round ${round}/${settings.rounds}  ${what}`);
}

/**
 * The contenders of round `round` (1-based): `order` rotated by one place a round (A B C, B C A, C A B, ...), so that
 * no contender always takes the same place: first, on a broker just woken by the warm-up, or right after the
 * previous round's last run, whose leftovers (queues being deleted, files being compacted) would fall on it every
 * round.
 */
export function roundOrder<T>(order: readonly T[], round: number): T[] {
  const shift = (round - 1) % order.length;
  return [...order.slice(shift), ...order.slice(0, shift)];
}
