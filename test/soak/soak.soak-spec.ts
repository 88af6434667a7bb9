import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Injectable, type INestApplicationContext } from '@nestjs/common';
import { NonRetryableError, ParkedMessages, RetryPublisher, RetryWithBackoff, type RetryContext } from 'nestjs-amqp-retry';
import { createApp } from '../support/app.js';
import { uniqueName } from '../support/broker.js';
import { PrivateBroker } from '../support/private-broker.js';
import { brokerView, countResources, growth, leakable, ProcessSampler, type SoakSample } from './soak.sampler.js';

/**
 * The soak test (npm run test:soak, docs/performance.md "Soak"): SOAK_MINUTES (default 30; CI 3) of mixed work in
 * this one process on a private node: publishes, delayed publishes, messages that fail once (a retry through a tier),
 * poison messages (parked, then replayed), a connection kill every few cycles under load and one memory alarm. The
 * load pauses at the end of each cycle (a minute; 15 s for runs under 10 minutes) until every confirmed message is
 * handled, and the process is sampled then. After warm-up: heap and RSS grow no more than 10%, and at every sample,
 * kills included, the library's connections and consumers are back at their baseline, and its channels and this
 * process's timers and sockets at or below it (a publishing channel reopens on the next publish). SOAK_REPORT names the JSON file of the samples (scripts/soak-chart.mjs draws it).
 */
const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
const CYCLE_MS = MINUTES >= 10 ? 60_000 : 15_000;
const RUN_MS = MINUTES * 60_000;
/** The cycles that end in the first 15% of the run (and the one that ends past it; 2 at least) warm up: no kill; the baseline is their last sample. */
const WARM_UP_MS = RUN_MS * 0.15;
const KILL_EVERY = 3; // cycles
/** Cycles after warm-up, at least: medians of three at each end, and a kill. */
const MIN_MEASURED = 5;
const PER_SECOND = 40; // publishes: 30 plain, 6 failing once, 2 poison, 2 delayed
const GROWTH_LIMIT = 1.1;

type Kind = 'ok' | 'failOnce' | 'poison' | 'delayed';
const KINDS: Kind[] = [...Array<Kind>(30).fill('ok'), ...Array<Kind>(6).fill('failOnce'), 'poison', 'poison', 'delayed', 'delayed'];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(probe: () => Promise<boolean> | boolean, timeoutMs: number, pollMs = 250): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > deadline) return false;
    await sleep(pollMs);
  }
}

let node: PrivateBroker;
beforeAll(async () => {
  node = await PrivateBroker.start();
  process.stdout.write(`Soak: ${MINUTES} min on ${node.name}, RabbitMQ ${node.version}\n`);
}, 600_000);
afterAll(async () => {
  await node?.stop(); // deletes the node and everything the run declared on it
}, 120_000);

it(`${MINUTES} minutes of mixed work: memory flat after warm-up, connections, channels, consumers and timers back at their baseline`, async () => {
  const queue = uniqueName('soak');
  const connectionName = `soak-${queue}`;
  /** Confirmed and not yet handled: emptied at each quiet point (so the run keeps no record of past messages). */
  const outstanding = new Map<number, Kind>();
  /** Handled before their publish was confirmed (a consumer can be faster than the confirm): not outstanding. */
  const handledEarly = new Set<number>();
  const totals = { published: 0, handled: 0, replayed: 0, rejected: 0 };

  @Injectable()
  class SoakHandler {
    @RetryWithBackoff({ queue, delays: ['200ms'], maxAttempts: 2, prefetch: 50 })
    async handle(payload: { id: number; kind: Kind }, context: RetryContext): Promise<void> {
      if (payload.kind === 'failOnce' && context.attempt === 1) throw new Error('soak: fails once');
      if (payload.kind === 'poison' && context.message.properties.headers?.['x-replayed-at'] === undefined) {
        throw new NonRetryableError('soak: poison until replayed');
      }
      if (outstanding.delete(payload.id)) totals.handled++;
      else handledEarly.add(payload.id);
    }
  }

  const app: INestApplicationContext = await createApp([SoakHandler], {
    url: node.url,
    connectionName,
    delayedDelivery: { prefix: `${queue}.delay` },
    shutdownTimeout: '5s',
  });
  await app.init();
  const publisher = app.get(RetryPublisher);
  const parked = await ParkedMessages.connect({ url: node.url, queues: [queue] });
  const sampler = new ProcessSampler();
  const samples: SoakSample[] = [];
  const problems: string[] = [];
  const started = Date.now();
  let nextId = 0;

  const publishBatch = async () => {
    await Promise.all(
      KINDS.map(async (kind) => {
        const id = nextId++;
        const delay = kind === 'delayed' ? 200 + (id % 19) * 100 : undefined; // 200 ms to 2 s
        try {
          await publisher.publish('', queue, { id, kind }, { delay, messageId: `soak-${id}` });
          totals.published++;
          if (handledEarly.delete(id)) totals.handled++;
          else outstanding.set(id, kind);
        } catch {
          totals.rejected++; // a kill or the alarm: the caller is told, as the README promises; not counted as sent
        }
      }),
    );
  };

  const load = async (ms: number, midway?: () => Promise<void>) => {
    const end = Date.now() + ms;
    let fired = midway === undefined;
    while (Date.now() < end) {
      const tick = Date.now();
      await publishBatch();
      if (!fired && Date.now() > end - ms / 2) {
        fired = true;
        await midway!();
      }
      await sleep(Math.max(0, 1000 - (Date.now() - tick)));
    }
  };

  /** Waits until every confirmed message is handled, replaying the parked ones as they arrive. */
  const drain = async () =>
    until(
      async () => {
        if (outstanding.size === 0) return true;
        const parkedNow = [...outstanding.values()].some((kind) => kind === 'poison');
        if (parkedNow) totals.replayed += (await parked.replay({ errorQueue: `${queue}.error` })).replayed;
        return outstanding.size === 0;
      },
      120_000,
      500,
    );

  const view = () => brokerView(node, connectionName, queue);
  let warmUp: number | undefined; // how many cycles warmed up
  let baseline: { connections: number; channels: number; consumers: number; leakable: number } | undefined;

  try {
    let alarmed = false;
    let quietMs = 5_000; // the last quiet point's length: a cycle's load leaves room for it
    // SOAK_MINUTES, and at least MIN_MEASURED cycles after warm-up (a busy machine makes the cycles longer).
    for (let cycle = 0; Date.now() - started < RUN_MS || warmUp === undefined || cycle - warmUp < MIN_MEASURED; cycle++) {
      const cycleStart = Date.now();
      let event: string | undefined;
      const kill: boolean = warmUp !== undefined && cycle > warmUp && (cycle - warmUp) % KILL_EVERY === 0;
      const alarm: boolean = warmUp !== undefined && !kill && !alarmed && cycleStart - started >= RUN_MS / 2;
      alarmed ||= alarm;
      await load(Math.max(5_000, CYCLE_MS - quietMs), async () => {
        if (kill) {
          const killed = await node.closeConnections(connectionName);
          if (killed === 0) problems.push(`cycle ${cycle}: no connection named ${connectionName} to kill`);
          event = `killed ${killed} connections`;
        }
        if (alarm) {
          const restore = await node.raiseMemoryAlarm();
          try {
            await publishBatch(); // blocked until the alarm clears
          } finally {
            await sleep(5_000);
            await restore();
          }
          event = 'memory alarm 5 s';
        }
      });
      const quietFrom = Date.now();
      if (!(await drain())) problems.push(`cycle ${cycle}: ${outstanding.size} confirmed messages not handled within 120 s`);
      outstanding.clear();
      handledEarly.clear(); // duplicates of past messages (redeliveries after a kill) are not outstanding either
      // After a kill, the broker view and the timers get a deadline to come back to their baseline. (rabbitmqctl
      // takes seconds on a busy machine: each view is asked once and reused.)
      let seen: Awaited<ReturnType<typeof view>> | undefined;
      if (baseline) {
        const b = baseline;
        // Channels open on use (a publishing channel after a reconnection waits for the next publish): never more.
        const back = await until(async () => {
          const now = (seen = await view());
          return now.connections === b.connections && now.channels <= b.channels && now.consumers === b.consumers;
        }, 60_000);
        if (!back) problems.push(`cycle ${cycle}${event ? ` (${event})` : ''}: broker view ${JSON.stringify(seen)} vs baseline ${JSON.stringify(b)}`);
        if (!(await until(() => leakable(countResources()) <= b.leakable, 15_000, 500))) {
          problems.push(`cycle ${cycle}${event ? ` (${event})` : ''}: ${JSON.stringify(countResources())} timers and sockets vs ${b.leakable}`);
        }
      }
      const sample: SoakSample = { minute: (Date.now() - started) / 60_000, ...sampler.sample(), ...(seen ?? (await view())), ...totals, event };
      samples.push(sample);
      quietMs = Date.now() - quietFrom;
      if (warmUp === undefined && Date.now() - started >= WARM_UP_MS && cycle >= 1) warmUp = cycle + 1;
      if (warmUp === cycle + 1) {
        const { connections, channels, consumers } = sample;
        baseline = { connections, channels, consumers, leakable: leakable(sample.resources) };
      }
      process.stdout.write(
        `soak ${sample.minute.toFixed(1)} min: rss ${sample.rssMb.toFixed(1)} MB, heap ${sample.heapMb.toFixed(1)} MB (of ${sample.heapTotalMb.toFixed(1)}), external ${sample.externalMb.toFixed(1)} MB, lag p99 ${sample.lagP99Ms.toFixed(1)} ms, ` +
          `${sample.connections} conn / ${sample.channels} ch / ${sample.consumers} consumers, resources ${JSON.stringify(sample.resources)}, ` +
          `${totals.published} published, ${totals.handled} handled, ${totals.replayed} replayed, ${totals.rejected} rejected${event ? `; ${event}` : ''}\n`,
      );
    }
  } finally {
    sampler.stop();
    await parked.close();
    await app.close();
    const report = process.env.SOAK_REPORT ?? join(tmpdir(), `amqp-retry-soak-${started}.json`);
    writeFileSync(report, JSON.stringify({ minutes: MINUTES, cycleMs: CYCLE_MS, warmUp, node: node.version, samples, problems }, null, 2));
    process.stdout.write(`Soak samples: ${report}\n`);
  }

  const warm = warmUp ?? samples.length;
  const heap = growth(samples, warm, (s) => s.heapMb);
  const rss = growth(samples, warm, (s) => s.rssMb);
  process.stdout.write(
    `Soak growth after warm-up: heap ${heap.from.toFixed(1)} -> ${heap.to.toFixed(1)} MB, rss ${rss.from.toFixed(1)} -> ${rss.to.toFixed(1)} MB\n`,
  );
  expect(problems).toEqual([]);
  expect(totals.handled).toBeGreaterThan(samples.length * PER_SECOND); // the load ran: at least a second's worth a cycle
  const measured = samples.length - warm;
  expect(measured).toBeGreaterThanOrEqual(MIN_MEASURED);
  expect(samples.filter((s) => s.event?.startsWith('killed')).length).toBeGreaterThanOrEqual(Math.floor((measured - 1) / KILL_EVERY));
  expect(samples.some((s) => s.event === 'memory alarm 5 s')).toBe(true);
  expect(heap.ratio).toBeLessThanOrEqual(GROWTH_LIMIT);
  expect(rss.ratio).toBeLessThanOrEqual(GROWTH_LIMIT);
});
