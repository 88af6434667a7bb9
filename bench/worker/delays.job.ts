import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import amqp from 'amqplib';
import { planDelayTopology, RetryModule, RetryPublisher } from 'nestjs-amqp-retry';
import { performance } from 'node:perf_hooks';
import { HELD_BACK_AFTER_MS, type DelaysJobResult, type Job, type WorkerMessage } from './protocol.js';

type DelaysJob = Extract<Job, { kind: 'delays' }>;

const MIN_DELAY_MS = 100;
/** Publishes awaiting their confirm at once: enough to keep the broker busy, few enough to keep call times honest. */
const PUBLISH_CONCURRENCY = 100;
/** How long the blockers wait: far beyond the run, so that nothing but head-of-line blocking could hold the short one. */
const BLOCKER_DELAY_MS = 3_600_000;
const ARRIVAL_POLL_MS = 20;
const PROBE_ID = -1;

/**
 * Delays spread evenly on a log scale from MIN_DELAY_MS to maxDelayMs, in a fixed pseudo-random order (golden-ratio
 * steps): short and long ones interleave, and every run publishes the same sequence.
 */
function mixedDelays(count: number, maxDelayMs: number): number[] {
  const ratio = maxDelayMs / MIN_DELAY_MS;
  return Array.from({ length: count }, (_, i) => Math.round(MIN_DELAY_MS * ratio ** ((i * 0.6180339887498949) % 1)));
}

/** Records when each message reaches the target queue, by id, from a plain consumer beside the publisher. */
async function recordArrivals(url: string, queue: string) {
  const model = await amqp.connect(url, { noDelay: true });
  const channel = await model.createChannel();
  await channel.prefetch(100);
  const arrivedAt = new Map<number, number>();
  const duplicates: number[] = [];
  await channel.consume(queue, (message) => {
    if (message === null) return;
    const { id } = JSON.parse(message.content.toString()) as { id: number };
    if (arrivedAt.has(id)) duplicates.push(id);
    else arrivedAt.set(id, performance.now());
    channel.ack(message);
  });
  return {
    arrivedAt,
    duplicates,
    /** Polls until `done()` holds or `timeoutMs` has passed (the caller counts what is missing); arrival times are taken on delivery, not here. */
    async until(done: () => boolean, timeoutMs: number): Promise<void> {
      const deadline = performance.now() + timeoutMs;
      while (!done() && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, ARRIVAL_POLL_MS));
    },
    close: () => model.close(),
  };
}

/**
 * Publishes at a steady `ratePerSecond`, each publish started on its own schedule and not waiting for the previous
 * confirm; returns when each was due (its start + its delay).
 */
async function publishPaced(publisher: RetryPublisher, queue: string, delays: Array<{ id: number; delayMs: number }>, ratePerSecond: number) {
  const dueAt = new Map<number, number>();
  const started = performance.now();
  const confirms: Array<Promise<void>> = [];
  for (let i = 0; i < delays.length; i++) {
    const wait = started + (i * 1_000) / ratePerSecond - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const { id, delayMs } = delays[i];
    dueAt.set(id, performance.now() + delayMs);
    confirms.push(publisher.publish('', queue, { id }, { delay: delayMs }));
  }
  await Promise.all(confirms);
  return dueAt;
}

/** Publishes every message, at most PUBLISH_CONCURRENCY unconfirmed; returns when each was due (call time + delay). */
async function publishAll(publisher: RetryPublisher, queue: string, delays: Array<{ id: number; delayMs: number }>): Promise<Map<number, number>> {
  const dueAt = new Map<number, number>();
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < delays.length; i = next++) {
      const { id, delayMs } = delays[i];
      dueAt.set(id, performance.now() + delayMs);
      await publisher.publish('', queue, { id }, { delay: delayMs });
    }
  };
  await Promise.all(Array.from({ length: PUBLISH_CONCURRENCY }, lane));
  return dueAt;
}

/**
 * The delays scenario, measured inside one process that publishes with the library's RetryPublisher and records
 * arrivals on the target queue (declared and deleted by the runner). First a probe: while RetryPublisher.publish
 * rejects a delay, the result says so and nothing else runs.
 *   1. `messages` messages with mixed delays (100 ms .. maxDelayMs), published at `ratePerSecond`: lateness of
 *      each; negative means early.
 *   2. `blockers` messages delayed by an hour, then one by 100 ms: its lateness shows head-of-line blocking.
 * The run uses a delay ladder of its own (prefix `<queue>.ladder`), of classic or quorum queues (`job.ladder`),
 * deleted afterwards with the hour-long blockers.
 */
export async function measureDelays(job: DelaysJob, send: (message: WorkerMessage) => Promise<void>): Promise<DelaysJobResult> {
  const prefix = `${job.queue}.ladder`;
  try {
    return await measureOnLadder(job, prefix, send);
  } finally {
    await deleteLadder(job.url, prefix, job.ladder);
  }
}

/** Deletes every queue and exchange of the run's ladder, whatever they hold. */
async function deleteLadder(url: string, prefix: string, queueType: DelaysJob['ladder']): Promise<void> {
  const model = await amqp.connect(url);
  try {
    const channel = await model.createChannel();
    const ladder = planDelayTopology(prefix, queueType);
    for (const { name } of ladder.queues) await channel.deleteQueue(name);
    for (const { name } of ladder.exchanges) await channel.deleteExchange(name);
  } finally {
    await model.close();
  }
}

async function measureOnLadder(job: DelaysJob, prefix: string, send: (message: WorkerMessage) => Promise<void>): Promise<DelaysJobResult> {
  @Module({ imports: [RetryModule.forRoot({ url: job.url, delayedDelivery: { prefix, queueType: job.ladder } })] })
  class DelaysModule {}

  const app = await NestFactory.createApplicationContext(DelaysModule, { logger: false });
  const arrivals = await recordArrivals(job.url, job.queue);
  try {
    const publisher = app.get(RetryPublisher);
    try {
      await publisher.publish('', job.queue, { id: PROBE_ID }, { delay: MIN_DELAY_MS });
    } catch (error) {
      return { available: false, reason: error instanceof Error ? error.message : String(error) };
    }
    await send({ type: 'ready' });
    const anomalies: string[] = [];

    const delays = mixedDelays(job.messages, job.maxDelayMs).map((delayMs, id) => ({ id, delayMs }));
    const dueAt = await publishPaced(publisher, job.queue, delays, job.ratePerSecond);
    await arrivals.until(() => delays.every(({ id }) => arrivals.arrivedAt.has(id)), job.maxDelayMs + HELD_BACK_AFTER_MS);
    const latenessMs = delays.flatMap(({ id }) => {
      const arrived = arrivals.arrivedAt.get(id);
      return arrived === undefined ? [] : [arrived - (dueAt.get(id) as number)];
    });
    if (latenessMs.length < delays.length) anomalies.push(`${delays.length - latenessMs.length} of ${delays.length} delayed messages never arrived`);

    const blockers = Array.from({ length: job.blockers }, (_, i) => ({ id: job.messages + i, delayMs: BLOCKER_DELAY_MS }));
    await publishAll(publisher, job.queue, blockers);
    const shortId = job.messages + job.blockers;
    const [shortDue] = (await publishAll(publisher, job.queue, [{ id: shortId, delayMs: MIN_DELAY_MS }])).values();
    await arrivals.until(() => arrivals.arrivedAt.has(shortId), MIN_DELAY_MS + HELD_BACK_AFTER_MS);
    const shortArrived = arrivals.arrivedAt.get(shortId);
    if (arrivals.duplicates.length > 0) anomalies.push(`${arrivals.duplicates.length} messages arrived twice`);

    return { available: true, latenessMs, behindLongLatenessMs: shortArrived === undefined ? null : shortArrived - shortDue, anomalies };
  } finally {
    await arrivals.close();
    await app.close();
  }
}
