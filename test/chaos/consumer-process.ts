import { type ChildProcess, execFile, fork } from 'node:child_process';
import { promisify } from 'node:util';

/** The child runs the built library: build it once per test file. */
export async function buildLibrary(): Promise<void> {
  await promisify(execFile)('npx', ['tsc', '-p', 'libs/amqp-retry/tsconfig.lib.json'], { timeout: 120_000 });
}

/** Starts consumer.mjs with `env` and resolves once its consumers run. CHAOS_VERBOSE=1 shows its output. */
export function startConsumer(env: Record<string, string>): Promise<ChildProcess> {
  return startChild('consumer.mjs', env);
}

/** Starts one of this folder's scripts with `env` and resolves once it sends its first message (ready). */
export function startChild(script: string, env: Record<string, string>): Promise<ChildProcess> {
  const output = process.env.CHAOS_VERBOSE ? 'inherit' : 'ignore';
  const child = fork(new URL(`./${script}`, import.meta.url).pathname, [], {
    env: { ...process.env, ...env },
    stdio: ['ignore', output, output, 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
  });
}

/** Sends `signal` and resolves with how the process ended. */
export function stopWith(child: ChildProcess, signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    child.once('exit', (code, received) => resolve({ code, signal: received }));
    child.kill(signal);
  });
}
