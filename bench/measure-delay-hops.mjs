#!/usr/bin/env node
// Measures what a hop through a ladder of TTL queues costs, to choose the delay ladder's base and depth.
//
// A hop: a message expires at the head of a level queue (x-message-ttl), is dead-lettered to the next
// position's topic exchange, routed on its digit and enqueued. The ladder has one topic exchange per digit
// position and one queue per nonzero digit value (TTL = digit * base^position ms); the routing key holds the
// digits, most significant first ("0.2.0.3"); a zero digit routes on to the next position's exchange.
// Lateness = arrival - publish - sum of the TTLs walked: what the broker adds, before any rounding.
//
//   part 1 (hops):   ladders of base 2, 4, 8 and 16 whose queues all hold HOP_TTL_MS, so a message can
//                    walk up to 32 positions in bounded time: lateness and broker CPU by base and hops
//                    taken (every exchange matches the whole key, one word per position).
//   part 2 (ladder): the chosen ladder (base 8, real TTLs), random delays below 2^13 ms published at RATE
//                    and forwarded on a confirm channel to a topic exchange with the original key:
//                    end-to-end lateness under load; then 100 ms delays behind 1 h ones (head-of-line).
//
// Usage: node bench/measure-delay-hops.mjs   (about 45 s)
//   env: AMQP_URL, MESSAGES (per part-1 case, 300), RATE (msgs/s, 1000), HOP_TTL_MS (10),
//        LADDER_SECONDS (part 2 publishing time, 10), PERSISTENT (1; 0 for transient), BASES (2,4,8,16)
// Names carry a random suffix and are deleted at the end; the run aborts after DEADLINE_MS.
import { connect } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const MESSAGES = Number(process.env.MESSAGES ?? 300);
const RATE = Number(process.env.RATE ?? 1000);
const HOP_TTL_MS = Number(process.env.HOP_TTL_MS ?? 10);
const LADDER_SECONDS = Number(process.env.LADDER_SECONDS ?? 10);
const PERSISTENT = process.env.PERSISTENT !== '0';
const LADDER_BASE = 8;
const LADDER_MAX_DELAY_MS = 2 ** 13 - 1; // part 2 stays short: at most 8.2 s per message
const DEADLINE_MS = 240_000;

const runId = randomUUID().slice(0, 8);
const declared = { exchanges: [], queues: [] };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The ladder covers 32-bit delays (up to 2^32 - 1 ms, RabbitMQ's largest TTL): base 2^k has ceil(32 / k)
 * digit positions, and the top one may have fewer values (base 8: digits 1..3 at position 10).
 */
const positionsFor = (base) => Math.ceil(32 / Math.log2(base));
const digitsAt = (base, pos) => Math.min(base, 2 ** (32 - pos * Math.log2(base))) - 1;

/** Declares a ladder; ttlOf(position, digit) is a queue's TTL in ms. Exchanges, then queues, then bindings. */
async function declareLadder(ch, name, base, ttlOf) {
  const positions = positionsFor(base);
  const p = `bench.delay.${runId}.${name}`;
  const exchange = (pos) => (pos < 0 ? `${p}.ready` : `${p}.p${pos}`);
  const queue = (pos, digit) => `${p}.p${pos}d${digit}`;
  const ready = `${p}.ready`;
  const pattern = (pos, digit) => `${'*.'.repeat(positions - 1 - pos)}${digit}.#`;
  const digits = (pos) => Array.from({ length: digitsAt(base, pos) }, (_, i) => i + 1);

  for (let pos = -1; pos < positions; pos++) {
    await ch.assertExchange(exchange(pos), pos < 0 ? 'fanout' : 'topic', { durable: true });
    declared.exchanges.push(exchange(pos));
  }
  await ch.assertQueue(ready, { durable: true });
  declared.queues.push(ready);
  for (let pos = 0; pos < positions; pos++) {
    for (const d of digits(pos)) {
      const args = { 'x-message-ttl': ttlOf(pos, d), 'x-dead-letter-exchange': exchange(pos - 1) };
      await ch.assertQueue(queue(pos, d), { durable: true, arguments: args });
      declared.queues.push(queue(pos, d));
    }
  }
  await ch.bindQueue(ready, exchange(-1), '');
  for (let pos = 0; pos < positions; pos++) {
    for (const d of digits(pos)) await ch.bindQueue(queue(pos, d), exchange(pos), pattern(pos, d));
    await ch.bindExchange(exchange(pos - 1), exchange(pos), pattern(pos, 0));
  }

  /** Where to publish a message with these digits (least significant first), and its nominal delay. */
  const route = (digitsLsbFirst) => {
    const top = digitsLsbFirst.findLastIndex((d) => d !== 0);
    return {
      exchange: exchange(top), // enter at the highest nonzero position: the zero positions above add nothing
      key: [...digitsLsbFirst].reverse().join('.'),
      delay: digitsLsbFirst.reduce((sum, d, pos) => sum + (d ? ttlOf(pos, d) : 0), 0),
      hops: digitsLsbFirst.filter((d) => d !== 0).length,
    };
  };
  return { base, positions, ready, route };
}

/** The local RabbitMQ node, if the broker runs on this machine: then its CPU time is reported too. */
const brokerPid = (() => {
  const isRabbit = (pid) => {
    try {
      return /beam\.smp.*\0-s\0rabbit\0boot\0/.test(readFileSync(`/proc/${pid}/cmdline`, 'latin1'));
    } catch {
      return false;
    }
  };
  try {
    return readdirSync('/proc').find((pid) => /^\d+$/.test(pid) && isRabbit(pid));
  } catch {
    return undefined;
  }
})();
function brokerCpuMs() {
  try {
    const fields = readFileSync(`/proc/${brokerPid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in 10 ms ticks
  } catch {
    return undefined;
  }
}

/** Consumes a queue and reports each arrival to whichever run is listening. */
async function listen(ch, queue) {
  const arrivals = { onArrival: () => {} };
  await ch.consume(queue, (msg) => msg && arrivals.onArrival(msg.properties.messageId, performance.now()), {
    noAck: true,
  });
  return arrivals;
}

/**
 * Publishes the routes at RATE on a confirm channel and waits until all arrived (or time is up).
 * Returns [{hops, lateness}] and the broker CPU spent per message.
 */
async function run(pub, routes, arrivals, headers = {}) {
  const sent = new Map();
  let arrived = 0;
  const done = new Promise((resolve) => {
    arrivals.onArrival = (id, at) => {
      const s = sent.get(id);
      if (!s || s.lateness !== undefined) return;
      s.lateness = at - s.at - s.delay;
      if (++arrived === routes.length) resolve();
    };
  });
  const cpu0 = brokerCpuMs();
  const start = performance.now();
  for (let i = 0; i < routes.length; i++) {
    // Pace against the clock, not with fixed sleeps, so the rate holds despite timer jitter.
    const wait = start + (i * 1000) / RATE - performance.now();
    if (wait > 1) await sleep(wait);
    const r = routes[i];
    const id = `${runId}.${start}.${i}`;
    sent.set(id, { at: performance.now(), delay: r.delay, hops: r.hops, lateness: undefined });
    pub.publish(r.exchange, r.key, Buffer.from('{"orderId":42}'), { messageId: id, persistent: PERSISTENT, headers });
  }
  await pub.waitForConfirms();
  await Promise.race([done, sleep(Math.max(...routes.map((r) => r.delay)) + 10_000)]);
  const cpu1 = brokerCpuMs();
  const cpu = cpu0 === undefined || cpu1 === undefined ? undefined : (cpu1 - cpu0) / routes.length;
  if (arrived < routes.length) console.log(`  !! ${routes.length - arrived} of ${routes.length} did not arrive`);
  return { results: [...sent.values()].filter((s) => s.lateness !== undefined), cpuMsPerMsg: cpu };
}

function stats(values) {
  const v = [...values].sort((a, b) => a - b);
  const at = (q) => v[Math.min(v.length - 1, Math.ceil(q * v.length) - 1)];
  return { n: v.length, p50: at(0.5), p99: at(0.99), max: v[v.length - 1] };
}

function printTable(title, rows) {
  console.log(`\n${title}`);
  console.log('  case          n     p50     p99     max  (lateness, ms)  broker CPU/msg');
  for (const { label, values, cpuMsPerMsg } of rows) {
    const s = stats(values);
    const f = (x) => x.toFixed(1).padStart(7);
    const cpu = cpuMsPerMsg === undefined ? '' : `${(cpuMsPerMsg * 1000).toFixed(0).padStart(6)} us`;
    console.log(`  ${label.padEnd(10)} ${String(s.n).padStart(5)} ${f(s.p50)} ${f(s.p99)} ${f(s.max)}       ${cpu}`);
  }
}

/** Digits (least significant first) with exactly `hops` nonzero ones at random positions. */
function randomDigits(base, positions, hops) {
  const order = Array.from({ length: positions }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const digits = new Array(positions).fill(0);
  for (const pos of order.slice(0, hops)) digits[pos] = 1 + Math.floor(Math.random() * digitsAt(base, pos));
  return digits;
}

async function partHops(conn, admin, pub) {
  const rows = [];
  for (const base of (process.env.BASES ?? '2,4,8,16').split(',').map(Number)) {
    const ladder = await declareLadder(admin, `hops-b${base}`, base, () => HOP_TTL_MS);
    const ch = await conn.createChannel();
    const arrivals = await listen(ch, ladder.ready);
    for (const hops of [0, 1, 4, 8, 11, 16, 24, 32].filter((h) => h <= ladder.positions)) {
      const routes = Array.from({ length: MESSAGES }, () => ladder.route(randomDigits(base, ladder.positions, hops)));
      const { results, cpuMsPerMsg } = await run(pub, routes, arrivals);
      rows.push({ label: `b${base} h${hops}`, values: results.map((r) => r.lateness), cpuMsPerMsg });
    }
    await ch.close();
  }
  printTable(
    `Part 1: lateness by base (b) and hops taken (h), every queue TTL ${HOP_TTL_MS} ms, ${MESSAGES} msgs per case ` +
      `at ${RATE}/s, ${PERSISTENT ? 'persistent' : 'transient'} (h0: published with an all-zero key)`,
    rows,
  );
}

/** The chosen ladder end to end, with a forwarder that acks after the confirm of its republish. */
async function partLadder(conn, admin, pub) {
  const base = LADDER_BASE;
  const ladder = await declareLadder(admin, 'ladder', base, (pos, d) => d * base ** pos);
  const target = `bench.delay.${runId}.target`;
  await admin.assertExchange(target, 'topic', { durable: true });
  declared.exchanges.push(target);
  await admin.assertQueue(target, { durable: true });
  declared.queues.push(target);
  await admin.bindQueue(target, target, 'orders.#');
  const headers = { 'x-delay-target-exchange': target, 'x-delay-target-routing-key': 'orders.created.eu' };

  const fwdIn = await conn.createChannel();
  const fwdOut = await conn.createConfirmChannel();
  await fwdIn.prefetch(500);
  await fwdIn.consume(ladder.ready, (msg) => {
    if (!msg) return;
    const { 'x-delay-target-exchange': exchange, 'x-delay-target-routing-key': key } = msg.properties.headers;
    fwdOut.publish(exchange, key, msg.content, msg.properties, (err) => (err ? fwdIn.nack(msg, false, true) : fwdIn.ack(msg)));
  });
  const ch = await conn.createChannel();
  const arrivals = await listen(ch, target);
  const routeFor = (delay) => {
    const digits = [];
    for (let pos = 0, rest = delay; pos < ladder.positions; pos++, rest = Math.floor(rest / base)) {
      digits.push(rest % base);
    }
    return ladder.route(digits);
  };

  const routes = Array.from({ length: Math.round(LADDER_SECONDS * RATE) }, () => routeFor(1 + Math.floor(Math.random() * LADDER_MAX_DELAY_MS)));
  const { results, cpuMsPerMsg } = await run(pub, routes, arrivals, headers);
  const byHops = new Map();
  for (const r of results) byHops.set(r.hops, [...(byHops.get(r.hops) ?? []), r.lateness]);
  const rows = [...byHops.entries()].sort(([a], [b]) => a - b).map(([hops, values]) => ({ label: `h${hops}`, values }));
  rows.push({ label: 'all', values: results.map((r) => r.lateness), cpuMsPerMsg });

  // Head-of-line check: short delays published behind many long ones must not wait for them. The long ones
  // are confirmed first, so the check measures blocking, not the broker absorbing a burst.
  const hour = routeFor(3_600_000);
  for (let i = 0; i < 1000; i++) {
    pub.publish(hour.exchange, hour.key, Buffer.from('{}'), { persistent: PERSISTENT, headers });
  }
  await pub.waitForConfirms();
  const behind = await run(
    pub,
    Array.from({ length: 100 }, () => routeFor(100)),
    arrivals,
    headers,
  );
  rows.push({ label: '100ms/1h', values: behind.results.map((r) => r.lateness) });

  printTable(
    `Part 2: base-${base} ladder with real TTLs, random delays 1..${LADDER_MAX_DELAY_MS} ms, ` +
      `${routes.length} msgs at ${RATE}/s, forwarded on a confirm channel to a topic exchange (end to end); ` +
      'then 100 msgs due in 100 ms published behind 1,000 due in 1 h',
    rows,
  );
  await Promise.all([ch.close(), fwdIn.close(), fwdOut.close()]);
}

/** Deletes what this run declared, on a fresh connection: the run's own may be the thing that failed. */
async function cleanUp() {
  const conn = await connect(AMQP_URL);
  const ch = await conn.createChannel();
  for (const q of declared.queues.splice(0)) await ch.deleteQueue(q);
  for (const e of declared.exchanges.splice(0)) await ch.deleteExchange(e);
  await conn.close();
}

const conn = await connect(AMQP_URL, { noDelay: true }); // Nagle would hold each small frame for up to 40 ms
const deadline = setTimeout(() => {
  console.error(`Aborting after ${DEADLINE_MS / 1000} s`);
  cleanUp().finally(() => process.exit(1));
}, DEADLINE_MS);
try {
  const admin = await conn.createChannel();
  const pub = await conn.createConfirmChannel();
  console.log(`RabbitMQ ${conn.connection.serverProperties.version}, run ${runId}`);
  await partHops(conn, admin, pub);
  await partLadder(conn, admin, pub);
} finally {
  clearTimeout(deadline);
  await conn.close().catch(() => {});
  await cleanUp();
}
