import { decodeHeartbeat, encodeHeartbeat, heartbeatKey, MAX_HEARTBEAT_BYTES, type Heartbeat } from './heartbeat.message.js';
import { LATENCY_BUCKETS } from './latency.histogram.js';

const zeros = () => new Array<number>(LATENCY_BUCKETS).fill(0);
const sampleBeat = (over: Partial<Heartbeat> = {}): Heartbeat => ({
  v: 1,
  application: 'shop',
  instance: { id: 'web-1:42:ab', host: 'web-1', pid: 42, version: '1.2.3', startedAt: 1_000 },
  seq: 1,
  sentAt: 2_000,
  intervalMs: 5_000,
  queues: [
    { queue: 'orders', consuming: true, state: 'running', handled: 3, retried: 1, parked: 0, failed: 1, processing: zeros(), critical: zeros() },
  ],
  ...over,
});

describe('Heartbeat message', () => {
  const key = heartbeatKey('shop');

  it('reads what an instance sends', () => {
    const beat = sampleBeat({
      queues: [
        {
          ...sampleBeat().queues[0],
          breaker: { reason: '3 calls in a row failed', error: 'connect ECONNREFUSED', openedAt: 5, failedTrials: 2, nextTrialAt: 9 },
          partitions: [0, 2],
        },
      ],
    });
    expect(decodeHeartbeat(encodeHeartbeat(beat), key)).toEqual(beat);
    expect(heartbeatKey(undefined)).toBe('amqp-retry.heartbeat.-');
  });

  it.each([
    ['a body over the size limit', Buffer.alloc(MAX_HEARTBEAT_BYTES + 1, 32), 'bytes'],
    ['a body that is not JSON', Buffer.from('{'), 'not JSON'],
    ['a JSON list', Buffer.from('[]'), 'not a JSON object'],
    ['another version', encodeHeartbeat({ ...sampleBeat(), v: 2 as 1 }), 'v is 2'],
    ['another application than the routing key', encodeHeartbeat(sampleBeat({ application: 'billing' })), 'routing key'],
    ['a negative count', encodeHeartbeat(sampleBeat({ queues: [{ ...sampleBeat().queues[0], handled: -1 }] })), 'queues[0]: handled'],
    ['a short histogram', encodeHeartbeat(sampleBeat({ queues: [{ ...sampleBeat().queues[0], processing: [1] }] })), 'processing'],
    ['an unknown state', encodeHeartbeat(sampleBeat({ queues: [{ ...sampleBeat().queues[0], state: 'gone' as 'open' }] })), 'state'],
    ['a control character in the host', encodeHeartbeat(sampleBeat({ instance: { ...sampleBeat().instance, host: 'a\u0007' } })), 'instance.host'],
    ['too many queues', encodeHeartbeat(sampleBeat({ queues: new Array(65).fill(sampleBeat().queues[0]) })), 'at most 64'],
    ['a fractional seq', encodeHeartbeat(sampleBeat({ seq: 1.5 })), 'seq'],
  ])('refuses %s, in words', (_, body, problem) => {
    const read = decodeHeartbeat(body, key);
    expect(read).toEqual({ problem: expect.stringContaining(problem) });
  });
});
