// The cost of one publish, by a figure the machine's load does not move much: CPU time per message, and under
// valgrind --tool=callgrind the instructions per message of the measured window alone (the window switches
// callgrind's collection on and off, so start-up and the warm-up window are left out). For "did this change
// help?" on a busy machine, where msg/s says little:
//   node bench/dist/profile/publish-cost.js ours|raw|raw-props [messages] [flood]
//   PUBLISH_COST_PROF=/tmp/ours.cpuprofile node bench/dist/profile/publish-cost.js ours   # then summarize-profile.js
//   CALLGRIND=1 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.%p \
//     node bench/dist/profile/publish-cost.js ours 5000      # then grep ^totals /tmp/cg.<pid>, divided by 5,000
// A warm-up window of the same size goes first (JIT), then the measured one: at most 1,000 awaiting their confirm,
// as the publish scenario; with `flood`, every publish called at once (peak RSS above the start is printed too).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import amqp from 'amqplib';
import type { PublisherContender, RunningPublisher } from '../contenders/contender.js';
import { WindowProfiler } from '../worker/window-profiler.js';

const [which = 'ours', count = '5000', mode = 'window'] = process.argv.slice(2);
const messages = Number(count);
const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const PUBLISHERS: Record<string, string> = {
  ours: 'ours.publisher.js',
  raw: 'raw-amqplib.publisher.js',
  'raw-props': 'raw-amqplib-same-properties.publisher.js', // raw with ours' message id and mandatory flag
};
if (!PUBLISHERS[which]) throw new Error(`publish-cost: "${which}" is none of ${Object.keys(PUBLISHERS).join(', ')}`);
const module = join(import.meta.dirname, '..', 'contenders', PUBLISHERS[which]);
const underCallgrind = process.env.CALLGRIND === '1';
/** PUBLISH_COST_PROF=<file.cpuprofile>: a CPU profile of the measured window alone. */
const profiler = process.env.PUBLISH_COST_PROF ? new WindowProfiler(process.env.PUBLISH_COST_PROF) : undefined;

async function windowed(publisher: RunningPublisher, exchange: string, routingKey: string, count = messages): Promise<void> {
  let next = 0;
  const lane = async () => {
    for (let id = next++; id < count; id = next++) await publisher.publish(exchange, routingKey, { id });
  };
  await Promise.all(Array.from({ length: Math.min(1_000, count) }, lane));
}

async function flood(publisher: RunningPublisher, exchange: string, routingKey: string): Promise<void> {
  const all: Array<Promise<void>> = [];
  const before = process.memoryUsage().heapUsed;
  for (let id = 0; id < messages; id++) all.push(publisher.publish(exchange, routingKey, { id }));
  if (process.env.PUBLISH_COST_HEAP)
    console.log(`heap after the calls, before any settled: +${((process.memoryUsage().heapUsed - before) / messages).toFixed(0)} bytes a publish`);
  await Promise.all(all);
}

/** Asynchronously: valgrind takes the command while this process runs on, and acknowledges it. */
const collect = async (on: boolean) => {
  if (underCallgrind) await promisify(execFile)('callgrind_control', ['-i', on ? 'on' : 'off', String(process.pid)]);
};

const name = `bench.publish-cost.${which}.${randomUUID().slice(0, 8)}`;
const admin = await amqp.connect(url);
const channel = await admin.createChannel();
await channel.assertExchange(name, 'direct', { durable: true });
await channel.assertQueue(name, { durable: true });
await channel.bindQueue(name, name, 'k');
const { publisher } = (await import(pathToFileURL(module).href)) as { publisher: PublisherContender };
const running = await publisher.start({ url });
try {
  const run = mode === 'flood' ? flood : windowed;
  // Warm-up (JIT): a window of the same size; before a flood only a small window, so that the flood's peak is its own.
  if (mode === 'flood') await windowed(running, name, 'k', 1_000);
  else await run(running, name, 'k');
  await channel.purgeQueue(name);
  let peak = process.memoryUsage.rss();
  const rssStart = peak;
  let heapPeak = 0;
  const sampler = setInterval(() => {
    const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
    peak = Math.max(peak, rss);
    heapPeak = Math.max(heapPeak, heapUsed + external + arrayBuffers);
  }, 20);
  await collect(true);
  profiler?.start();
  const cpu = process.cpuUsage();
  const started = performance.now();
  await run(running, name, 'k');
  const used = process.cpuUsage(cpu);
  const elapsed = performance.now() - started;
  profiler?.stop();
  await collect(false);
  clearInterval(sampler);
  const cpuUs = (used.user + used.system) / messages;
  console.log(
    `${which} ${mode}: ${messages} publishes, ${cpuUs.toFixed(1)} µs CPU each, ${((messages / elapsed) * 1000).toFixed(0)} msg/s, ` +
      `peak RSS ${(peak / 2 ** 20).toFixed(0)} MB (+${((peak - rssStart) / 2 ** 20).toFixed(0)} MB), peak heap + buffers ${(heapPeak / 2 ** 20).toFixed(0)} MB`,
  );
} finally {
  await running.stop();
  await channel.deleteQueue(name);
  await channel.deleteExchange(name);
  await admin.close();
}
