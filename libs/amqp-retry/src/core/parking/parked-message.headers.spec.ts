import type { MessageProperties } from 'amqplib';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { encodedTableSize } from '../headers/field-table.size.js';
import {
  BROKER_DEATH_HEADERS,
  MAX_DEATH_HISTORY_BYTES,
  MAX_EXCEPTION_MESSAGE_BYTES,
  MAX_EXCEPTION_STACK_BYTES,
  PARKED_HEADERS_BUDGET,
  parkedPublishOptions,
  truncateUtf8,
  type ParkInput,
} from './parked-message.headers.js';
import { readDeathHistory, type XDeath } from '../delivery/x-death.parser.js';
import { seededRandom } from '../../testing/seeded-random.fixture.js';
import { sampleProperties } from '../../testing/message-properties.fixture.js';

/** The entries of a death history the broker would write (the test's own data is always well formed). */
const deathsOf = (header: unknown): XDeath[] => {
  const history = readDeathHistory(header);
  if (!history.ok) throw new Error(history.problem);
  return history.deaths;
};

// amqplib's own encoder checks that a parked copy's headers really fit its 64 KiB buffer (test only).
const require = createRequire(import.meta.url);
const codec = require(join(dirname(require.resolve('amqplib')), 'lib', 'codec.js')) as {
  encodeTable: (buffer: Buffer, value: Record<string, unknown>, offset: number) => number;
  decodeFields: (slice: Buffer) => Record<string, unknown>;
};
const encodesInto64KiB = (headers: Record<string, unknown>) => codec.encodeTable(Buffer.alloc(64 * 1024), headers, 0);

const X_DEATH = [
  {
    count: 3,
    reason: 'expired',
    queue: 'orders.retry.1',
    time: { '!': 'timestamp', value: 1_700_000_100 },
    exchange: 'orders.dlx',
    'routing-keys': ['x'],
  },
  {
    count: 3,
    reason: 'rejected',
    queue: 'orders',
    time: { '!': 'timestamp', value: 1_700_000_000 },
    exchange: 'shop',
    'routing-keys': ['order.created'],
  },
];
const DEATH_HEADERS = {
  'x-death': X_DEATH,
  'x-first-death-queue': 'orders',
  'x-first-death-reason': 'rejected',
  'x-first-death-exchange': 'shop',
  'x-last-death-queue': 'orders.retry.1',
  'x-last-death-reason': 'expired',
  'x-last-death-exchange': 'orders.dlx',
  'x-delivery-count': 2,
  'x-acquired-count': 3,
};

/** Headers are loosely typed here: the tests give shapes amqplib's types do not describe (malformed x-death). */
const properties = (over: Partial<Omit<MessageProperties, 'headers'>> & { headers?: Record<string, unknown> } = {}): MessageProperties =>
  sampleProperties({ priority: 3, headers: { tenant: 'acme' }, ...over });

const input = (over: Partial<ParkInput> = {}): ParkInput => ({
  reason: 'exhausted',
  error: new Error('payment declined'),
  handlerCalls: 4,
  queue: 'orders',
  deaths: deathsOf([
    { queue: 'orders.retry.1', reason: 'expired', count: 3, exchange: 'orders.dlx', 'routing-keys': ['x'] },
    { queue: 'orders', reason: 'rejected', count: 3, exchange: 'shop', 'routing-keys': ['order.created'] },
  ]),
  deliveredExchange: 'orders.return',
  deliveredRoutingKey: 'orders.after.3',
  properties: properties(),
  now: new Date('2026-01-02T03:04:05.678Z'),
  ...over,
});

describe('parkedPublishOptions', () => {
  it('cannot restore a long header beyond 2^53: amqplib decoded it to a number, and the copy carries that number', () => {
    // What amqplib hands the consumer for a long of 2^53 + 1 on the wire (codec.js: Number(readBigInt64BE)).
    const wire = Buffer.alloc(64);
    const size = codec.encodeTable(wire, { id: { '!': 'int64', value: 2n ** 53n + 1n } }, 0);
    const delivered = codec.decodeFields(wire.subarray(4, size));
    expect(delivered.id).toBe(2 ** 53);
    const headers = parkedPublishOptions(input({ properties: properties({ headers: delivered }) })).headers as Record<string, unknown>;
    // The parked copy's header, as amqplib writes it: a long, of the rounded value.
    const out = Buffer.alloc(64 * 1024);
    codec.encodeTable(out, { id: headers.id }, 0);
    expect(out.toString('latin1', 7, 8)).toBe('l'); // table length (4), key length (1), key "id" (2), then the type tag
    expect(out.readBigInt64BE(8)).toBe(2n ** 53n);
  });

  it('masks passwords in the exception message and stack: the copy leaves the process', () => {
    const error = new Error('cannot reach postgres://app:pa/ss@db:5432/orders');
    const headers = parkedPublishOptions(input({ error })).headers as Record<string, string>;
    expect(headers['x-exception-message']).toBe('cannot reach postgres://app:***@db:5432/orders');
    expect(headers['x-exception-stack']).toContain('postgres://app:***@db:5432/orders');
    expect(JSON.stringify(headers)).not.toContain('pa/ss');
  });

  it('keeps the properties and headers and adds the parking headers', () => {
    const options = parkedPublishOptions(input());
    expect(options).toMatchObject({
      contentType: 'application/json',
      persistent: true,
      priority: 3,
      correlationId: 'c-1',
      messageId: 'm-1',
      timestamp: 1_700_000_000,
      type: 'order.created',
      appId: 'shop',
    });
    expect(options.headers).toMatchObject({
      tenant: 'acme',
      'x-parked-reason': 'exhausted',
      'x-exception-message': 'payment declined',
      'x-original-exchange': 'shop',
      'x-original-routing-key': 'order.created',
      'x-retry-attempts': 4,
      'x-parked-at': '2026-01-02T03:04:05.678Z',
    });
    expect(options.headers?.['x-exception-stack']).toMatch(/^Error: payment declined\n\s+at /);
  });

  it('names the queue it failed in and the id it was given, for a replay', () => {
    expect(parkedPublishOptions(input({ id: 'p-1' })).headers).toMatchObject({ 'x-original-queue': 'orders', 'x-parked-id': 'p-1' });
    expect(parkedPublishOptions(input()).headers).not.toHaveProperty('x-parked-id');
  });

  it('takes exchange and key from the delivery when the message never failed before', () => {
    const options = parkedPublishOptions(input({ deaths: [], deliveredExchange: 'shop', deliveredRoutingKey: 'order.paid', reason: 'malformed' }));
    expect(options.headers).toMatchObject({ 'x-original-exchange': 'shop', 'x-original-routing-key': 'order.paid', 'x-parked-reason': 'malformed' });
  });

  it('keeps the first route of a replayed copy parked again, which reached its queue by name', () => {
    const headers = { tenant: 'acme', 'x-original-exchange': 'shop', 'x-original-routing-key': 'order.created', 'x-original-queue': 'orders' };
    const rejected = deathsOf([{ queue: 'orders', reason: 'rejected', count: 1, exchange: '', 'routing-keys': ['orders'] }]);
    for (const deaths of [[], rejected]) {
      const options = parkedPublishOptions(
        input({ deaths, deliveredExchange: '', deliveredRoutingKey: 'orders', properties: properties({ headers }) }),
      );
      expect(options.headers).toMatchObject({
        'x-original-exchange': 'shop',
        'x-original-routing-key': 'order.created',
        'x-original-queue': 'orders',
      });
    }
  });

  it('describes a thrown non-Error', () => {
    const options = parkedPublishOptions(input({ error: 'plain string' }));
    expect(options.headers).toMatchObject({ 'x-exception-message': 'plain string', 'x-exception-stack': 'plain string' });
  });

  it('drops expiration and userId so the copy can neither expire nor be refused, keeping them as headers', () => {
    const options = parkedPublishOptions(input({ properties: properties({ expiration: '60000', userId: 'billing' }) }));
    expect(options.expiration).toBeUndefined();
    expect(options.userId).toBeUndefined();
    expect(options.headers).toMatchObject({ 'x-original-expiration': '60000', 'x-original-user-id': 'billing' });
  });

  it("keeps the expiration the broker recorded at the first dead-lettering when a retry has lost it (x-death's original-expiration)", () => {
    const deaths = deathsOf([
      { queue: 'orders.retry.1', reason: 'expired', count: 2, exchange: 'orders.dlx', 'routing-keys': ['x'] },
      { queue: 'orders', reason: 'rejected', count: 2, exchange: 'shop', 'routing-keys': ['order.created'], 'original-expiration': '60000' },
    ]);
    expect(parkedPublishOptions(input({ deaths })).headers).toMatchObject({ 'x-original-expiration': '60000' });
    // Another queue's entry, when this queue's rejection has none (the message was dead-lettered elsewhere first).
    const elsewhere = deathsOf([{ queue: 'inbox', reason: 'rejected', count: 1, 'original-expiration': '5000' }]);
    expect(parkedPublishOptions(input({ deaths: elsewhere })).headers).toMatchObject({ 'x-original-expiration': '5000' });
    // The delivery's own expiration comes first; none at all, no header.
    expect(parkedPublishOptions(input({ deaths, properties: properties({ expiration: '1000' }) })).headers).toMatchObject({
      'x-original-expiration': '1000',
    });
    expect(parkedPublishOptions(input()).headers).not.toHaveProperty(['x-original-expiration']);
  });

  it('truncates a huge stack to the header budget', () => {
    const error = new Error('deep');
    error.stack = 'x'.repeat(100_000);
    const stack = parkedPublishOptions(input({ error })).headers?.['x-exception-stack'] as string;
    expect(Buffer.byteLength(stack)).toBeLessThanOrEqual(MAX_EXCEPTION_STACK_BYTES);
    expect(stack.endsWith('... [truncated]')).toBe(true);
  });
  it('removes the broker death headers, so that a replay starts afresh, and keeps x-death as x-retry-death-history', () => {
    const headers = parkedPublishOptions(input({ properties: properties({ headers: { tenant: 'acme', ...DEATH_HEADERS } }) })).headers ?? {};
    for (const name of BROKER_DEATH_HEADERS) expect(headers).not.toHaveProperty([name]);
    // Both of a quorum queue's counters (x-acquired-count: RabbitMQ 4.3): a replay must not start with deliveries it never had.
    expect(Object.keys(headers).filter((name) => name.endsWith('-count'))).toEqual([]);
    expect(headers['x-retry-death-history']).toEqual(X_DEATH);
    expect(headers.tenant).toBe('acme');
  });

  it('has no x-retry-death-history when the message had no x-death', () => {
    expect(parkedPublishOptions(input()).headers).not.toHaveProperty(['x-retry-death-history']);
  });

  it.each<[string, unknown, string]>([
    ['a string element', [X_DEATH[0], 'text'], JSON.stringify([X_DEATH[0], 'text'])],
    ['a lone string', 'forged', '"forged"'],
    ['a negative count', [{ ...X_DEATH[0], count: -3 }], JSON.stringify([{ ...X_DEATH[0], count: -3 }])],
    ['a Buffer and a bigint', [Buffer.from('abc'), BigInt(7)], '["<3 bytes>","7n"]'],
  ])('keeps a malformed x-death (%s) as text, for operators to see', (_, header, text) => {
    const headers = parkedPublishOptions(input({ properties: properties({ headers: { 'x-death': header } }) })).headers ?? {};
    expect(headers['x-retry-death-history']).toBe(text);
    expect(headers).not.toHaveProperty(['x-death']);
  });

  it('keeps a circular malformed x-death as text without throwing', () => {
    const header: unknown[] = ['a'];
    header.push(header);
    const headers = parkedPublishOptions(input({ properties: properties({ headers: { 'x-death': header } }) })).headers ?? {};
    expect(typeof headers['x-retry-death-history']).toBe('string');
  });

  it('keeps a death history too long for its cap as capped text', () => {
    const long = Array.from({ length: 500 }, (_, i) => ({ ...X_DEATH[0], queue: `orders.retry.${i}` }));
    const history = parkedPublishOptions(input({ properties: properties({ headers: { 'x-death': long } }) })).headers?.['x-retry-death-history'];
    expect(typeof history).toBe('string');
    expect(Buffer.byteLength(history as string)).toBeLessThanOrEqual(MAX_DEATH_HISTORY_BYTES);
    expect((history as string).startsWith('[{"count":3,"reason":"expired","queue":"orders.retry.0"')).toBe(true);
    expect((history as string).endsWith('... [truncated]')).toBe(true);
  });

  it("does not carry an earlier park's exception headers into this one", () => {
    const earlier = { 'x-exception-message': 'old failure', 'x-exception-stack': 'old stack', 'x-parked-reason': 'exhausted' };
    const headers = parkedPublishOptions(input({ reason: 'malformed', properties: properties({ headers: earlier }) })).headers ?? {};
    expect(headers).toMatchObject({ 'x-exception-message': 'payment declined', 'x-parked-reason': 'malformed' });
    expect(headers['x-exception-stack']).toMatch(/^Error: payment declined/);
  });

  it('cuts a 1 MB error message to its cap', () => {
    const headers = parkedPublishOptions(input({ error: new Error('m'.repeat(1024 * 1024)) })).headers ?? {};
    const message = headers['x-exception-message'] as string;
    expect(Buffer.byteLength(message)).toBeLessThanOrEqual(MAX_EXCEPTION_MESSAGE_BYTES);
    expect(message).toMatch(/^m+\.\.\. \[truncated\]$/);
    expect(encodedTableSize(headers)).toBeLessThanOrEqual(PARKED_HEADERS_BUDGET);
  });

  it('keeps 100 KB of original headers within the budget by dropping the largest, naming them', () => {
    const original: Record<string, unknown> = { tenant: 'acme', ...DEATH_HEADERS };
    for (let i = 0; i < 10; i++) original[`big-${i}`] = 'b'.repeat(10 * 1024);
    for (let i = 0; i < 50; i++) original[`small-${i}`] = `value-${i}`;
    const error = Object.assign(new Error('e'.repeat(100_000)), { stack: 's'.repeat(100_000) });
    const headers = parkedPublishOptions(input({ error, properties: properties({ headers: original }) })).headers ?? {};

    expect(encodedTableSize(headers)).toBeLessThanOrEqual(PARKED_HEADERS_BUDGET);
    expect(() => encodesInto64KiB(headers)).not.toThrow();
    const dropped = String(headers['x-parked-dropped-headers']).split(',');
    expect(dropped.length).toBeGreaterThan(0);
    expect(dropped.every((name) => name.startsWith('big-'))).toBe(true);
    for (const name of dropped) expect(headers).not.toHaveProperty([name]);
    // Only as many as needed go: the small ones, the other big ones and every parking header stay.
    expect(dropped.length).toBeLessThan(10);
    expect(headers).toMatchObject({ tenant: 'acme', 'small-49': 'value-49', 'x-parked-reason': 'exhausted', 'x-retry-attempts': 4 });
    expect(headers['x-retry-death-history']).toEqual(X_DEATH);
    expect(Buffer.byteLength(headers['x-exception-message'] as string)).toBeGreaterThanOrEqual(1024);
  });

  it('cuts the stack before the message, and the message before any original header', () => {
    const original = { 'fills-most': 'f'.repeat(PARKED_HEADERS_BUDGET - 12 * 1024) };
    const error = Object.assign(new Error('e'.repeat(100_000)), { stack: 's'.repeat(100_000) });
    const headers = parkedPublishOptions(input({ error, properties: properties({ headers: original }) })).headers ?? {};
    expect(headers['fills-most'] === original['fills-most']).toBe(true);
    expect(headers).not.toHaveProperty(['x-parked-dropped-headers']);
    expect(Buffer.byteLength(headers['x-exception-message'] as string)).toBe(MAX_EXCEPTION_MESSAGE_BYTES);
    expect(Buffer.byteLength(headers['x-exception-stack'] as string)).toBeLessThan(MAX_EXCEPTION_STACK_BYTES);
    expect(encodedTableSize(headers)).toBeLessThanOrEqual(PARKED_HEADERS_BUDGET);

    const fuller = { 'fills-all': 'f'.repeat(PARKED_HEADERS_BUDGET - 4 * 1024) };
    const tight = parkedPublishOptions(input({ error, properties: properties({ headers: fuller }) })).headers ?? {};
    expect(tight['fills-all'] === fuller['fills-all']).toBe(true);
    expect(tight).not.toHaveProperty(['x-exception-stack']);
    expect(Buffer.byteLength(tight['x-exception-message'] as string)).toBeLessThan(MAX_EXCEPTION_MESSAGE_BYTES);
    expect(Buffer.byteLength(tight['x-exception-message'] as string)).toBeGreaterThan(1024);
    expect(encodedTableSize(tight)).toBeLessThanOrEqual(PARKED_HEADERS_BUDGET);
  });

  it('drops original headers amqplib cannot encode, whatever the room', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const original = { tenant: 'acme', huge: BigInt(1), loop: cyclic, ['k'.repeat(300)]: 'v' };
    const headers = parkedPublishOptions(input({ properties: properties({ headers: original }) })).headers ?? {};
    expect(Object.keys(headers).filter((key) => !key.startsWith('x-'))).toEqual(['tenant']);
    expect(String(headers['x-parked-dropped-headers']).split(',').sort()).toEqual(['huge', 'k'.repeat(300), 'loop'].sort());
    expect(() => encodesInto64KiB(headers)).not.toThrow();
  });

  it('keeps what an earlier park dropped in the list', () => {
    const original = { 'x-parked-dropped-headers': 'earlier', now: BigInt(1) };
    const headers = parkedPublishOptions(input({ properties: properties({ headers: original }) })).headers ?? {};
    expect(headers['x-parked-dropped-headers']).toBe('earlier,now');
  });

  it('caps the list of dropped headers', () => {
    const original = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`unencodable-header-${i}`, BigInt(i)]));
    const list = parkedPublishOptions(input({ properties: properties({ headers: original }) })).headers?.['x-parked-dropped-headers'] as string;
    expect(Buffer.byteLength(list)).toBeLessThanOrEqual(1024);
    expect(list.endsWith('... [truncated]')).toBe(true);
  });

  it('never throws on a hostile error', () => {
    const trap = () => {
      throw new Error('trap');
    };
    const error = new Proxy({}, { get: trap, getPrototypeOf: trap, has: trap, ownKeys: trap });
    const headers = parkedPublishOptions(input({ error })).headers ?? {};
    expect(headers).toMatchObject({ 'x-exception-message': '[object without a string form]', 'x-exception-stack': '[object without a string form]' });
  });

  it('stays within the budget for 2,000 random mixes of headers, messages and stacks', () => {
    const next = seededRandom(3);
    const failures: unknown[] = [];
    let withDrops = 0;
    for (let trial = 0; trial < 2_000; trial++) {
      const original: Record<string, unknown> = next() < 0.5 ? { ...DEATH_HEADERS } : {};
      const count = Math.floor(next() * 40);
      for (let i = 0; i < count; i++) {
        const size = Math.floor(next() ** 3 * 40_000);
        original[`h${i}`] = next() < 0.2 ? Buffer.alloc(size) : next() < 0.1 ? ['é'.repeat(size / 2), size] : 'é€'.repeat(size / 5);
      }
      const error = Object.assign(new Error('m'.repeat(Math.floor(next() ** 2 * 50_000))), { stack: 's'.repeat(Math.floor(next() * 60_000)) });
      const headers =
        parkedPublishOptions(input({ error, properties: properties({ headers: original, expiration: '1000', userId: 'u' }) })).headers ?? {};
      const dropped = typeof headers['x-parked-dropped-headers'] === 'string' ? headers['x-parked-dropped-headers'].split(',') : [];
      const ok =
        encodedTableSize(headers) <= PARKED_HEADERS_BUDGET &&
        ['x-parked-reason', 'x-original-exchange', 'x-original-routing-key', 'x-retry-attempts', 'x-parked-at', 'x-exception-message'].every((k) =>
          Object.hasOwn(headers, k),
        ) &&
        Object.keys(original)
          .filter((key) => !BROKER_DEATH_HEADERS.includes(key))
          .every((key) => (Object.hasOwn(headers, key) ? !dropped.includes(key) : dropped.includes(key)));
      if (!ok) failures.push({ trial, size: encodedTableSize(headers), dropped });
      if (dropped.length > 0) withDrops++;
    }
    expect(failures).toEqual([]);
    expect(withDrops).toBeGreaterThan(200); // both outcomes are well represented
    expect(withDrops).toBeLessThan(1_800);
  });
});

describe('truncateUtf8', () => {
  it('leaves short text alone', () => {
    expect(truncateUtf8('héllo', 100)).toBe('héllo');
    expect(truncateUtf8('héllo', 6)).toBe('héllo');
  });

  it('never splits a multi-byte character', () => {
    const cut = truncateUtf8('€'.repeat(100), 40);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(40);
    expect(cut).toMatch(/^€+\.\.\. \[truncated\]$/);
  });

  it('never splits a surrogate pair', () => {
    for (let max = 0; max < 40; max++) {
      const cut = truncateUtf8('😀'.repeat(20), max);
      expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(max);
      expect(cut).not.toContain('\ufffd');
    }
  });

  it('cuts without the marker when there is no room for it, and to nothing at 0', () => {
    expect(truncateUtf8('abcdefghijklmnopqrstuvwxyz', 10)).toBe('abcdefghij');
    expect(truncateUtf8('abc', 0)).toBe('');
    expect(truncateUtf8('abc', -5)).toBe('');
  });

  it('cuts a very long text by reading only its head', () => {
    const text = 'x'.repeat(10_000_000); // made once: the test measures the cut, not the making of the text
    const started = Date.now();
    let cut = '';
    for (let i = 0; i < 1_000; i++) cut = truncateUtf8(text, 4096);
    expect([Buffer.byteLength(cut), cut.endsWith('... [truncated]')]).toEqual([4096, true]);
    // Encoding the whole text each time would be 10 GB of work; the head alone is 4 MB: far below this bound either way.
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
