import type { QueueState } from '../../breaker/queue.state.js';
import { BEAT_COUNTS, type BreakerCause, type Heartbeat, type HeartbeatIdentity, type HeartbeatQueue } from './heartbeat.types.js';
import { LATENCY_BUCKETS } from './latency.histogram.js';
import { MAX_PARTITIONS } from '../../partitions/partitions.config.js';
import { isPlainObject } from '../../config/config.readers.js';

/** Routing key prefix of heartbeats on the control exchange: `amqp-retry.heartbeat.<application>`. */
export const HEARTBEAT_KEY_PREFIX = 'amqp-retry.heartbeat.';

/** The routing key an application's instances beat with (`-` for an application given no name). */
export function heartbeatKey(application: string | undefined): string {
  return `${HEARTBEAT_KEY_PREFIX}${application ?? '-'}`;
}

/** Longest heartbeat body read: one with the most queues allowed is well under it. */
export const MAX_HEARTBEAT_BYTES = 65_536;
/** Most queues one heartbeat may name. */
export const MAX_HEARTBEAT_QUEUES = 64;
const MAX_TEXT = 200;
const MAX_COUNT = 1_000_000_000;

export type { BreakerCause, Heartbeat, HeartbeatIdentity, HeartbeatQueue } from './heartbeat.types.js';

/** Encodes a heartbeat as sent. */
export function encodeHeartbeat(beat: Heartbeat): Buffer {
  return Buffer.from(JSON.stringify(beat));
}

type Problem = { problem: string };

/** What is wrong with a heartbeat: thrown by the readers below, returned by decodeHeartbeat. */
class HeartbeatProblem extends Error {}

function check(ok: boolean, problem: string): asserts ok {
  if (!ok) throw new HeartbeatProblem(problem);
}

/** Reads a heartbeat: a bounded JSON object, each field typed and within bounds, of the application its routing key names. */
export function decodeHeartbeat(content: Buffer, routingKey: string): Heartbeat | Problem {
  try {
    return readHeartbeat(content, routingKey);
  } catch (error) {
    if (error instanceof HeartbeatProblem) return { problem: error.message };
    throw error;
  }
}

function readHeartbeat(content: Buffer, routingKey: string): Heartbeat {
  check(content.length <= MAX_HEARTBEAT_BYTES, `the body has ${content.length} bytes; a heartbeat has at most ${MAX_HEARTBEAT_BYTES}`);
  let body: unknown;
  try {
    body = JSON.parse(content.toString('utf8'));
  } catch {
    throw new HeartbeatProblem('the body is not JSON');
  }
  check(isPlainObject(body), 'the body is not a JSON object');
  check(body.v === 1, `v is ${JSON.stringify(body.v)}; this version reads 1`);
  const application = text(body.application, 'application');
  check(heartbeatKey(application === '-' ? undefined : application) === routingKey, 'application must be the one the routing key names');
  const instance = readIdentity(body.instance);
  const [seq, sentAt, intervalMs] = (['seq', 'sentAt', 'intervalMs'] as const).map((key) =>
    count(body[key], Number.MAX_SAFE_INTEGER, `${key} must be a non-negative integer`),
  );
  const { queues } = body;
  check(Array.isArray(queues) && queues.length <= MAX_HEARTBEAT_QUEUES, `queues must be a list of at most ${MAX_HEARTBEAT_QUEUES}`);
  return { v: 1, application, instance, seq, sentAt, intervalMs, queues: queues.map(readQueue) };
}

function readIdentity(value: unknown): HeartbeatIdentity {
  check(isPlainObject(value), 'instance is not an object');
  const id = text(value.id, 'instance.id');
  const host = text(value.host, 'instance.host');
  const version = text(value.version, 'instance.version', true);
  const pid = count(value.pid, 2 ** 32, 'instance.pid must be a non-negative integer');
  return { id, host, pid, version, startedAt: count(value.startedAt, Number.MAX_SAFE_INTEGER, 'instance.startedAt must be a non-negative integer') };
}

const STATES: readonly QueueState[] = ['running', 'half-open', 'open', 'paused'];

/** Entry `i` of `queues`; its problems are named with their place (`queues[2]: ...`). */
function readQueue(value: unknown, i: number): HeartbeatQueue {
  const at = `queues[${i}]: `;
  check(isPlainObject(value), `${at}not an object`);
  const queue = text(value.queue, 'queue', false, at);
  check(typeof value.consuming === 'boolean', `${at}consuming must be true or false`);
  check(STATES.includes(value.state as QueueState), `${at}state must be one of ${STATES.join(', ')}`);
  const counts = BEAT_COUNTS.map((key) => [key, count(value[key], MAX_COUNT, `${at}${key} must be an integer from 0 to ${MAX_COUNT}`)]);
  for (const key of ['processing', 'critical'] as const) {
    const list = value[key];
    const valid = Array.isArray(list) && list.length === LATENCY_BUCKETS && list.every((n) => isCount(n, MAX_COUNT));
    check(valid, `${at}${key} must be ${LATENCY_BUCKETS} counts`);
  }
  const { consuming, state, processing, critical, partitions, breaker } = value;
  const result = { queue, consuming, state, ...Object.fromEntries(counts), processing, critical } as HeartbeatQueue;
  if (partitions !== undefined) {
    const valid = Array.isArray(partitions) && partitions.length <= MAX_PARTITIONS && partitions.every((n) => isCount(n, MAX_PARTITIONS));
    check(valid, `${at}partitions must be at most ${MAX_PARTITIONS} partition numbers`);
    result.partitions = partitions as number[];
  }
  if (breaker !== undefined) result.breaker = readBreaker(breaker, at);
  return result;
}

function readBreaker(value: unknown, at: string): BreakerCause {
  check(isPlainObject(value), `${at}breaker is not an object`);
  const reason = text(value.reason, 'breaker.reason', true, at);
  const error = text(value.error, 'breaker.error', true, at);
  const time = (key: 'openedAt' | 'nextTrialAt') => count(value[key], Number.MAX_SAFE_INTEGER, `${at}breaker.${key} must be a time (epoch ms)`);
  const cause: BreakerCause = {
    reason,
    error,
    openedAt: time('openedAt'),
    failedTrials: count(value.failedTrials, MAX_COUNT, `${at}breaker.failedTrials must be a count`),
  };
  if (value.nextTrialAt !== undefined) cause.nextTrialAt = time('nextTrialAt');
  return cause;
}

function isCount(value: unknown, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;
}

/** `value` as a count from 0 to `max`; else `problem` is thrown. */
function count(value: unknown, max: number, problem: string): number {
  check(isCount(value, max), problem);
  return value;
}

/** Printable text of at most MAX_TEXT characters (they reach the page); `empty` allows ''; `at` starts the problem. */
function text(value: unknown, name: string, empty = false, at = ''): string {
  // eslint-disable-next-line no-control-regex
  const printable = typeof value === 'string' && value.length <= MAX_TEXT && (empty || value !== '') && !/[\u0000-\u001f\u007f-\u009f]/.test(value);
  check(printable, `${at}${name} must be printable text of at most ${MAX_TEXT} characters`);
  return value as string;
}
