import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The CLI's compiled entry, as the package's bin runs it. */
export const CLI_MAIN = 'libs/amqp-retry/dist/esm/ops/cli/main.js';

/** Written after each build: a build newer than every source file is not made again. */
const BUILT_MARKER = 'libs/amqp-retry/dist/.built-by-tests'; // beside the builds, not in the package

/** The newest modification time of the library's sources (and its build settings). */
function newestSource(dir = 'libs/amqp-retry/src'): number {
  let newest = statSync('libs/amqp-retry/tsconfig.lib.json').mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const time = entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs;
    if (time > newest) newest = time;
  }
  return newest;
}

/**
 * Compiles the library as users get it, so that a test runs the CLI as a child process against the built code, not
 * the sources. Call it in `beforeAll` with a timeout of about two minutes; a failed build throws with tsc's output.
 * A build newer than every source is kept: the four files that run the CLI build once per change, not once each.
 */
export function buildCli(): void {
  if (existsSync(CLI_MAIN) && existsSync(BUILT_MARKER) && statSync(BUILT_MARKER).mtimeMs > newestSource()) return;
  const startedAt = new Date(); // the marker's time: a source saved during the build is newer, and builds again
  const build = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'libs/amqp-retry/tsconfig.lib.json'], { encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`build failed: ${build.stdout}${build.stderr}`);
  if (!existsSync(CLI_MAIN)) throw new Error(`the build wrote no ${CLI_MAIN}`);
  writeFileSync(BUILT_MARKER, `${startedAt.toISOString()}\n`);
  utimesSync(BUILT_MARKER, startedAt, startedAt);
}
