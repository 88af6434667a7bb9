// npm run bench:partitions: throughput of a partitioned handler (8 partitions) with 1 and 3 instances against plain
// singleActiveConsumer (with ordering by the same key) with 1 and 3 instances. Each run: the instances start, take
// their partitions, then BENCH_PARTS_N messages (default 6,000) over 500 keys are published at once; the figure is
// messages handled per second from the first publish to the last result. Runs in the order sac-1, parts-1, sac-3,
// parts-3, each with fresh queues, deleted after. Writes one line per run and the ratios. BENCH_PARTS_PREFETCH
// (default 20) is each consumer's prefetch: with 1, each queue runs one message at a time (strict order even without
// keys), and the handlers' I/O, not the CPU, bounds the throughput.
import { fork } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import amqp from 'amqplib';

const BROKER = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const N = Number(process.env.BENCH_PARTS_N ?? 6000);
const KEYS = 500;
const PREFETCH = process.env.BENCH_PARTS_PREFETCH ?? '20';
const COUNT = 8;
const sleep = (ms) => new Promise((resolve) => globalThis.setTimeout(resolve, ms));

async function waitFor(probe, what, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

async function run(mode, instances) {
  const queue = `bench.parts.${mode}.${randomUUID().slice(0, 8)}`;
  const results = `${queue}.results`;
  const connection = await amqp.connect(BROKER);
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue(results, { durable: true });
  const children = [];
  try {
    const states = [];
    for (let i = 0; i < instances; i++) {
      const child = fork(new URL('./instance.mjs', import.meta.url).pathname, [], {
        env: { ...process.env, BENCH_URL: BROKER, BENCH_QUEUE: queue, BENCH_RESULTS: results, BENCH_MODE: mode, BENCH_COUNT: String(COUNT), BENCH_PREFETCH: PREFETCH },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.push(child);
      const state = { consuming: 0 };
      states.push(state);
      child.on('message', (m) => (state.consuming = m.consuming));
      await new Promise((resolve, reject) => {
        child.once('message', resolve);
        child.once('exit', (code) => reject(new Error(`instance exited with ${code}`)));
      });
    }
    const ready = () =>
      mode === 'partitions' ? states.reduce((sum, s) => sum + s.consuming, 0) === COUNT && states.every((s) => s.consuming > 0 || instances > COUNT) : true;
    await waitFor(ready, 'the partitions assigned', 30_000);
    const started = Date.now();
    for (let n = 0; n < N; n++) {
      const key = `k${n % KEYS}`;
      channel.publish(mode === 'partitions' ? queue : '', mode === 'partitions' ? '' : queue, Buffer.from(JSON.stringify({ n })), {
        headers: { 'x-key': key },
        contentType: 'application/json',
        persistent: true,
      });
      if (n % 1000 === 999) await channel.waitForConfirms();
    }
    await channel.waitForConfirms();
    await waitFor(async () => (await channel.checkQueue(results)).messageCount >= N, 'every message handled', 600_000);
    const rate = N / ((Date.now() - started) / 1000);
    console.log(`${mode.padEnd(10)} ${instances} instance(s): ${rate.toFixed(0)} msg/s`);
    return rate;
  } finally {
    await Promise.all(children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve() : (child.once('exit', resolve), child.kill('SIGTERM'))))));
    const names = mode === 'partitions' ? Array.from({ length: COUNT }, (_, i) => `${queue}.p${i}`) : [queue];
    for (const name of names) {
      const plan = `${name}.retry.plan`;
      const tier = `${name}.retry.1.1s.${createHash('sha256').update('1000').digest('hex').slice(0, 6)}`; // the library's name of the one 1 s tier
      for (const q of [name, `${name}.error`, plan, tier]) await channel.deleteQueue(q).catch(() => undefined);
      for (const e of [`${name}.dlx`, `${name}.dlx.first`, `${name}.return`]) await channel.deleteExchange(e).catch(() => undefined);
    }
    if (mode === 'partitions') {
      await channel.deleteQueue(`${queue}.partitions.key`).catch(() => undefined);
      for (const e of [queue, `${queue}.partitions.members`]) await channel.deleteExchange(e).catch(() => undefined);
    }
    await channel.deleteQueue(results).catch(() => undefined);
    await connection.close();
  }
}

console.log(`partitions bench: ${N} messages over ${KEYS} keys, handlers of 5 ms simulated I/O, prefetch ${PREFETCH}, ${COUNT} partitions; ${BROKER.replace(/\/\/[^@]*@/, '//')}`);
const sac1 = await run('sac', 1);
const parts1 = await run('partitions', 1);
const sac3 = await run('sac', 3);
const parts3 = await run('partitions', 3);
console.log(`partitions/sac with 1 instance: ${(parts1 / sac1).toFixed(2)}x; with 3 instances: ${(parts3 / sac3).toFixed(2)}x; partitions 3 vs 1 instance: ${(parts3 / parts1).toFixed(2)}x`);
