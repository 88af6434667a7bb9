import { pathToFileURL } from 'node:url';
import type { PublisherContender, RunningPublisher } from '../contenders/contender.js';
import type { MeasuredWindow } from './measured-window.js';
import type { Job, PublishWindowResult } from './protocol.js';

type PublishJob = Extract<Job, { kind: 'publish' }>;

/** The id of the one publish made before the window opens; the runner expects it in the queue with the others. */
const PROBE_ID = -1;

/** What became of a run's publishes. */
interface Settled {
  failed: number;
  firstError?: string;
}

/** A window of publishes: a new one starts as soon as one settles, so at most `concurrency` await a confirm. */
async function publishWindowed(publisher: RunningPublisher, job: PublishJob, concurrency: number, settled: Settled): Promise<void> {
  let next = 0;
  const lane = async () => {
    for (let id = next++; id < job.messages; id = next++) {
      await publisher.publish(job.exchange, job.routingKey, { id }).catch((error: unknown) => noteFailure(settled, error));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, job.messages) }, lane));
}

/**
 * A careless flood: every publish called at once, none awaited until all are started. The loop is synchronous, so the
 * RSS sampler cannot run during it; what the client buffers stays buffered until the socket takes it, so the peak is
 * still sampled once the loop ends.
 */
async function publishFlood(publisher: RunningPublisher, job: PublishJob, settled: Settled): Promise<void> {
  const publishes: Array<Promise<void>> = [];
  for (let id = 0; id < job.messages; id++) {
    publishes.push(publisher.publish(job.exchange, job.routingKey, { id }).catch((error: unknown) => noteFailure(settled, error)));
  }
  await Promise.all(publishes);
}

function noteFailure(settled: Settled, error: unknown): void {
  settled.failed++;
  settled.firstError ??= error instanceof Error ? error.message : String(error);
}

/**
 * The publish scenario's measurement, in the contender's own process. One publish goes out before the window opens:
 * the library opens its publishing connection on first use, and the window is about publishing, not connecting.
 * The window then runs from the first measured publish call to the last publish settled (confirmed or rejected).
 */
export async function measurePublishing(job: PublishJob, window: MeasuredWindow): Promise<PublishWindowResult> {
  const { publisher } = (await import(pathToFileURL(job.contenderModule).href)) as { publisher: PublisherContender };
  const running = await publisher.start({ url: job.url });
  try {
    await running.publish(job.exchange, job.routingKey, { id: PROBE_ID });
    // Warm-up, unmeasured: a service publishes for its whole life, and a window that starts in the interpreter measures
    // the JIT's start (longer for the library's code than for raw amqplib's) as much as the publishes.
    const warming: Settled = { failed: 0 };
    if (job.warmUp > 0) await publishWindowed(running, { ...job, messages: job.warmUp }, 1_000, warming);
    if (warming.failed > 0) throw new Error(`${warming.failed} of the ${job.warmUp} warm-up publishes failed: ${warming.firstError}`);
    const settled: Settled = { failed: 0 };
    window.open();
    if (job.concurrency === null) await publishFlood(running, job, settled);
    else await publishWindowed(running, job, job.concurrency, settled);
    window.close();
    return { ...window.resultFor(job.messages), ...settled };
  } finally {
    await running.stop();
  }
}
