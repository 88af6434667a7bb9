import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Job, WorkerMessage } from '../worker/protocol.js';

const MEASURED_PROCESS = join(import.meta.dirname, '..', 'worker', 'measured-process.js');
/** Beyond its own deadline, a measured process that has not exited is killed after this long. */
const KILL_GRACE_MS = 5_000;

export interface MeasuredRun<R> {
  /** Resolves when the contender consumes (rejects with `result` if the process fails first). */
  ready: Promise<void>;
  result: Promise<R>;
  /** Kills the process (if it still runs): for an aborted bench. */
  kill(): void;
}

/** Starts a measured process for `job`. Its output goes to ours, so a crash or a contender's stray log is seen. */
export function startMeasuredRun<R>(job: Job): MeasuredRun<R> {
  const child: ChildProcess = fork(MEASURED_PROCESS, [JSON.stringify(job)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const result = new Promise<R>((resolve, reject) => {
    let outcome: WorkerMessage | undefined;
    const killer = setTimeout(() => child.kill('SIGKILL'), job.deadlineMs + KILL_GRACE_MS);
    child.on('message', (message: WorkerMessage) => {
      if (message.type === 'ready') markReady();
      else outcome = message;
    });
    child.on('exit', (code, signal) => {
      clearTimeout(killer);
      if (outcome?.type === 'result') return resolve(outcome.result as R);
      const why = outcome?.type === 'failed' ? outcome.error : `exited with ${signal ?? `code ${code}`} and no result`;
      reject(new Error(`${job.kind} of ${job.queue}: ${why}`));
    });
  });
  const readyOrFailed = Promise.race([ready, result.then(() => undefined)]);
  readyOrFailed.catch(() => undefined); // callers that never wait for ready see the failure through `result`
  return {
    ready: readyOrFailed,
    result,
    kill: () => child.kill('SIGKILL'),
  };
}
