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

/** Reads a heartbeat: a bounded JSON object, each field typed and within bounds, of the application its routing key names. */
export function decodeHeartbeat(content: Buffer, routingKey: string): Heartbeat | Problem {
  if (content.length > MAX_HEARTBEAT_BYTES)
    return { problem: `the body has ${content.length} bytes; a heartbeat has at most ${MAX_HEARTBEAT_BYTES}` };
  let body: unknown;
  try {
    body = JSON.parse(content.toString('utf8'));
  } catch {
    return { problem: 'the body is not JSON' };
  }
  if (!isPlainObject(body)) return { problem: 'the body is not a JSON object' };
  if (body.v !== 1) return { problem: `v is ${JSON.stringify(body.v)}; this version reads 1` };
  const application = text(body.application, 'application');
  if (typeof application !== 'string') return application;
  if (heartbeatKey(application === '-' ? undefined : application) !== routingKey)
    return { problem: 'application must be the one the routing key names' };
  const instance = readIdentity(body.instance);
  if ('problem' in instance) return instance;
  for (const key of ['seq', 'sentAt', 'intervalMs'] as const) {
    if (!isCount(body[key], Number.MAX_SAFE_INTEGER)) return { problem: `${key} must be a non-negative integer` };
  }
  if (!Array.isArray(body.queues) || body.queues.length > MAX_HEARTBEAT_QUEUES)
    return { problem: `queues must be a list of at most ${MAX_HEARTBEAT_QUEUES}` };
  const queues: HeartbeatQueue[] = [];
  for (const [i, entry] of body.queues.entries()) {
    const queue = readQueue(entry);
    if ('problem' in queue) return { problem: `queues[${i}]: ${queue.problem}` };
    queues.push(queue);
  }
  return { v: 1, application, instance, seq: body.seq as number, sentAt: body.sentAt as number, intervalMs: body.intervalMs as number, queues };
}

function readIdentity(value: unknown): HeartbeatIdentity | Problem {
  if (!isPlainObject(value)) return { problem: 'instance is not an object' };
  const id = text(value.id, 'instance.id');
  const host = text(value.host, 'instance.host');
  const version = text(value.version, 'instance.version', true);
  for (const field of [id, host, version]) if (typeof field !== 'string') return field;
  if (!isCount(value.pid, 2 ** 32)) return { problem: 'instance.pid must be a non-negative integer' };
  if (!isCount(value.startedAt, Number.MAX_SAFE_INTEGER)) return { problem: 'instance.startedAt must be a non-negative integer' };
  return { id: id as string, host: host as string, pid: value.pid as number, version: version as string, startedAt: value.startedAt as number };
}

const STATES: readonly QueueState[] = ['running', 'half-open', 'open', 'paused'];

function readQueue(value: unknown): HeartbeatQueue | Problem {
  if (!isPlainObject(value)) return { problem: 'not an object' };
  const queue = text(value.queue, 'queue');
  if (typeof queue !== 'string') return queue;
  if (typeof value.consuming !== 'boolean') return { problem: 'consuming must be true or false' };
  if (!STATES.includes(value.state as QueueState)) return { problem: `state must be one of ${STATES.join(', ')}` };
  for (const key of BEAT_COUNTS) {
    if (!isCount(value[key], MAX_COUNT)) return { problem: `${key} must be an integer from 0 to ${MAX_COUNT}` };
  }
  for (const key of ['processing', 'critical'] as const) {
    const list = value[key];
    if (!Array.isArray(list) || list.length !== LATENCY_BUCKETS || !list.every((n) => isCount(n, MAX_COUNT))) {
      return { problem: `${key} must be ${LATENCY_BUCKETS} counts` };
    }
  }
  const result: HeartbeatQueue = {
    queue,
    consuming: value.consuming,
    state: value.state as QueueState,
    handled: value.handled as number,
    retried: value.retried as number,
    parked: value.parked as number,
    failed: value.failed as number,
    processing: value.processing as number[],
    critical: value.critical as number[],
  };
  if (value.partitions !== undefined) {
    const list = value.partitions;
    if (!Array.isArray(list) || list.length > MAX_PARTITIONS || !list.every((n) => isCount(n, MAX_PARTITIONS))) {
      return { problem: `partitions must be at most ${MAX_PARTITIONS} partition numbers` };
    }
    result.partitions = list as number[];
  }
  if (value.breaker !== undefined) {
    const breaker = readBreaker(value.breaker);
    if ('problem' in breaker) return breaker;
    result.breaker = breaker;
  }
  return result;
}

function readBreaker(value: unknown): BreakerCause | Problem {
  if (!isPlainObject(value)) return { problem: 'breaker is not an object' };
  const reason = text(value.reason, 'breaker.reason', true);
  const error = text(value.error, 'breaker.error', true);
  for (const field of [reason, error]) if (typeof field !== 'string') return field;
  if (!isCount(value.openedAt, Number.MAX_SAFE_INTEGER)) return { problem: 'breaker.openedAt must be a time (epoch ms)' };
  if (!isCount(value.failedTrials, MAX_COUNT)) return { problem: 'breaker.failedTrials must be a count' };
  if (value.nextTrialAt !== undefined && !isCount(value.nextTrialAt, Number.MAX_SAFE_INTEGER))
    return { problem: 'breaker.nextTrialAt must be a time (epoch ms)' };
  const cause: BreakerCause = {
    reason: reason as string,
    error: error as string,
    openedAt: value.openedAt as number,
    failedTrials: value.failedTrials as number,
  };
  if (value.nextTrialAt !== undefined) cause.nextTrialAt = value.nextTrialAt as number;
  return cause;
}

function isCount(value: unknown, max: number): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;
}

/** Printable text of at most MAX_TEXT characters (they reach the page); `empty` allows ''. */
function text(value: unknown, name: string, empty = false): string | Problem {
  // eslint-disable-next-line no-control-regex
  if (typeof value !== 'string' || value.length > MAX_TEXT || (!empty && value === '') || /[\u0000-\u001f\u007f-\u009f]/.test(value)) {
    return { problem: `${name} must be printable text of at most ${MAX_TEXT} characters` };
  }
  return value;
}
