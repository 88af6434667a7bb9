// The process that runs one contender for one measurement, started by the runner with a Job as its argument. It
// loads only that contender (our library under Nest 12, or a peer under Nest 11), so contenders never share a
// process, a heap or a JIT. It answers over IPC: 'ready' once consuming, then 'result' or 'failed'.
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { Contender, ConsumerOptions } from '../contenders/contender.js';
import { MeasuredWindow } from './measured-window.js';
import type { Job, RetryWindowResult, WindowResult, WorkerMessage } from './protocol.js';
import { WindowProfiler } from './window-profiler.js';

/** After the last message is handled, its ack is still on its way out: let it leave before stopping. */
const ACK_FLUSH_MS = 50;
/**
 * Nest's RMQ server resolves listen() before the broker confirmed its consumer (it does not await channel.consume):
 * stopping at once would close the channel under that pending reply.
 */
const SETTLE_AFTER_START_MS = 250;

const send = (message: WorkerMessage) =>
  new Promise<void>((resolve) => (process.send ? process.send(message, undefined, {}, () => resolve()) : resolve()));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise with its resolve function, for "the last message was handled". */
function signal() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Tells the runner the consumer runs, waits for the last handled message, lets its ack out, then stops. */
async function runUntil(consumer: { stop(): Promise<void> }, allHandled: Promise<void>): Promise<void> {
  await send({ type: 'ready' });
  await allHandled;
  await sleep(ACK_FLUSH_MS);
  await consumer.stop();
}

const windowOf = (job: Job) => new MeasuredWindow(job.profileFile ? new WindowProfiler(job.profileFile) : undefined);

const optionsOf = (job: Job, handle: ConsumerOptions['handle']): ConsumerOptions => ({
  url: job.url,
  queue: job.queue,
  prefetch: job.prefetch,
  retryDelayMs: job.retryDelayMs,
  variant: job.variant,
  handle,
});

async function declare(job: Job, contender: Contender): Promise<null> {
  const consumer = await contender.start(optionsOf(job, () => undefined));
  await sleep(SETTLE_AFTER_START_MS);
  await consumer.stop();
  return null;
}

async function consume(job: Job & { messages: number }, contender: Contender): Promise<WindowResult> {
  const window = windowOf(job);
  const allHandled = signal();
  let handled = 0;
  const consumer = await contender.start(
    optionsOf(job, () => {
      window.open();
      if (++handled === job.messages) {
        window.close();
        allHandled.resolve();
      }
    }),
  );
  await runUntil(consumer, allHandled.promise);
  return window.resultFor(handled);
}

class FirstAttemptFails extends Error {}

async function retry(job: Job & { messages: number }, contender: Contender): Promise<RetryWindowResult> {
  const window = windowOf(job);
  const allHandled = signal();
  const firstAttemptAt = new Map<number, number>();
  const retried = new Set<number>();
  const latenessMs: number[] = [];
  const anomalies: string[] = [];
  const consumer = await contender.start(
    optionsOf(job, ({ id }, attempt) => {
      const now = performance.now();
      window.open();
      if (attempt === 1 && !firstAttemptAt.has(id)) {
        firstAttemptAt.set(id, now);
        throw new FirstAttemptFails(`message ${id} fails its first attempt`);
      }
      const first = firstAttemptAt.get(id);
      if (attempt !== 2 || first === undefined || retried.has(id)) {
        anomalies.push(
          `message ${id}: attempt ${attempt}${first === undefined ? ' without a first attempt' : ''}${retried.has(id) ? ' after its retry succeeded' : ''}`,
        );
        return;
      }
      retried.add(id);
      latenessMs.push(now - first - job.retryDelayMs);
      if (latenessMs.length === job.messages) {
        window.close();
        allHandled.resolve();
      }
    }),
  );
  await runUntil(consumer, allHandled.promise);
  return { ...window.resultFor(latenessMs.length), latenessMs, anomalies };
}

async function run(job: Job): Promise<unknown> {
  // A publisher module exports `publisher`, not `contender`: the publish job loads it itself.
  if (job.kind === 'publish') return (await import('./publish.job.js')).measurePublishing(job, windowOf(job));
  const { contender } = (await import(pathToFileURL(job.contenderModule).href)) as { contender: Contender };
  switch (job.kind) {
    case 'declare':
      return declare(job, contender);
    case 'consume':
      return consume(job, contender);
    case 'retry':
      return retry(job, contender);
    case 'delays':
      // Loaded only here: it brings in our library and Nest 12, which no other contender's process may load.
      return (await import('./delays.job.js')).measureDelays(job, send);
  }
}

const fail = async (error: unknown) => {
  await send({ type: 'failed', error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
};
// A contender's own unawaited promise that rejects is a failure of this run, reported as such.
process.on('unhandledRejection', fail);

const job = JSON.parse(process.argv[2] ?? 'null') as Job;
const deadline = setTimeout(() => void fail(`${job.kind} on ${job.queue} had no result after ${job.deadlineMs} ms`), job.deadlineMs);

run(job).then(
  async (result) => {
    clearTimeout(deadline);
    await send({ type: 'result', result });
    process.exit(0);
  },
  (error: unknown) => {
    clearTimeout(deadline);
    return fail(error);
  },
);
