// The cost of consuming one message on the happy path, by figures the machine's load does not move much: CPU time per
// message, and under valgrind --tool=callgrind the instructions per message of the measured window alone. For "did this
// change help?" on a busy machine, where a msg/s or a CPU ratio between two processes says little:
//   node bench/dist/profile/consume-cost.js ours|raw-coalesced|... [messages]
//   CALLGRIND=1 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.%p \
//     node bench/dist/profile/consume-cost.js ours 10000        # then grep ^totals /tmp/cg.<pid>, divided by 10,000
// (instrumentation, switched on and off by callgrind_control -i, bounds what is counted; collection stays on).
// The contender consumes in this process; a child process (never traced: valgrind does not follow children unless told)
// publishes a warm-up batch (JIT), then, once collection is on, the measured batch, faster than a traced consumer takes
// them, so the consumer works through a backlog as in the happy-path scenario.
import { execFile, fork } from 'node:child_process';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import amqp from 'amqplib';
import { CONTENDERS, type ContenderId } from '../contenders/registry.js';
import type { Contender } from '../contenders/contender.js';

const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

if (process.argv[2] === '--publish') {
  // The child: publishes `count` messages of ids from `first` to the queue, then exits.
  const [queue, first, count] = process.argv.slice(3);
  const model = await amqp.connect(url);
  const channel = await model.createConfirmChannel();
  for (let id = Number(first); id < Number(first) + Number(count); id++) {
    channel.publish('', queue, Buffer.from(JSON.stringify({ id })), { persistent: true });
  }
  await channel.waitForConfirms();
  await model.close();
  process.exit(0);
}

const [which = 'ours', count = '20000'] = process.argv.slice(2);
const info = CONTENDERS[which as ContenderId];
if (!info) throw new Error(`consume-cost: "${which}" is none of ${Object.keys(CONTENDERS).join(', ')}`);
const messages = Number(count);
const warmUp = Math.min(messages, 5_000);
const underCallgrind = process.env.CALLGRIND === '1';

/** Asynchronously: valgrind takes the command while this process runs on, and acknowledges it. */
const collect = async (on: boolean) => {
  if (underCallgrind) await promisify(execFile)('callgrind_control', ['-i', on ? 'on' : 'off', String(process.pid)]);
};
const publish = (queue: string, first: number, n: number) =>
  new Promise<void>((resolve, reject) => {
    const child = fork(import.meta.filename, ['--publish', queue, String(first), String(n)], { stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the publisher exited with ${code}`))));
  });

const queue = `bench.consume-cost.${which}.${randomUUID().slice(0, 8)}`;
let handled = 0;
let reached: (() => void) | undefined;
let target = 0;
const handle = () => {
  if (++handled === target) reached?.();
};
const until = (n: number) => new Promise<void>((resolve) => ((target = n), (reached = resolve), handled >= n && resolve()));

const { contender } = (await import(pathToFileURL(info.module).href)) as { contender: Contender };
const running = await contender.start({ url, queue, prefetch: 100, retryDelayMs: 200, handle });
try {
  await Promise.all([publish(queue, 0, warmUp), until(warmUp)]);
  await collect(true);
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all([publish(queue, warmUp, messages), until(warmUp + messages)]);
  const used = process.cpuUsage(cpu);
  const elapsed = performance.now() - started;
  await collect(false);
  console.log(
    `${which}: ${messages} messages consumed, ${((used.user + used.system) / messages).toFixed(1)} µs CPU each (user ` +
      `${(used.user / messages).toFixed(1)}, system ${(used.system / messages).toFixed(1)}; the publisher's process apart), ` +
      `${((messages / elapsed) * 1000).toFixed(0)} msg/s`,
  );
} finally {
  await running.stop();
  const admin = await amqp.connect(url);
  const channel = await admin.createChannel();
  const names = info.namesFor(queue);
  for (const name of names.queues) await channel.deleteQueue(name).catch(() => undefined);
  for (const name of names.exchanges) await channel.deleteExchange(name).catch(() => undefined);
  await admin.close().catch(() => undefined);
}
