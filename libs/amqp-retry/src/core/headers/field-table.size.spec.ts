import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { encodedHeaderSize, encodedTableSize } from './field-table.size.js';
import { seededRandom } from '../../testing/seeded-random.fixture.js';

// amqplib's own encoder is the oracle (test only; the estimator itself imports nothing of amqplib). Its codec is
// not an exported subpath, so it is loaded by file.
const require = createRequire(import.meta.url);
const codec = require(join(dirname(require.resolve('amqplib')), 'lib', 'codec.js')) as {
  encodeTable: (buffer: Buffer, value: Record<string, unknown>, offset: number) => number;
};
const actualSize = (headers: Record<string, unknown>) => codec.encodeTable(Buffer.alloc(4 * 1024 * 1024), headers, 0);

/** Random encodable header values of every kind amqplib handles, nested a few levels. */
function randomValue(next: () => number, depth: number): unknown {
  const pick = Math.floor(next() * (depth > 2 ? 9 : 11));
  const text = () => 'aé€😀'.repeat(Math.floor(next() * 20)).slice(0, Math.floor(next() * 40));
  switch (pick) {
    case 0:
      return text();
    case 1:
      return Math.floor((next() - 0.5) * 2 ** (next() * 60));
    case 2:
      return (next() - 0.5) * 1e6;
    case 3:
      return next() < 0.5;
    case 4:
      return null;
    case 5:
      return Buffer.alloc(Math.floor(next() * 50));
    case 6:
      return { '!': 'timestamp', value: Math.floor(next() * 2e9) };
    case 7:
      return { '!': ['long', 'int', 'short', 'byte', 'double', 'float'][Math.floor(next() * 6)], value: Math.floor(next() * 100) };
    case 8:
      return { '!': 'decimal', value: { places: 2, digits: Math.floor(next() * 1000) } };
    case 9:
      return Array.from({ length: Math.floor(next() * 5) }, () => randomValue(next, depth + 1));
    default:
      return randomTable(next, depth + 1);
  }
}

function randomTable(next: () => number, depth: number): Record<string, unknown> {
  const table: Record<string, unknown> = {};
  const entries = Math.floor(next() * 6);
  for (let i = 0; i < entries; i++) table[`k${i}-${'ü'.repeat(Math.floor(next() * 4))}`] = randomValue(next, depth);
  return table;
}

describe('encodedTableSize', () => {
  it('is never below what amqplib encodes, nor far above it, over 5,000 random tables', () => {
    const next = seededRandom(11);
    const violations: unknown[] = [];
    for (let trial = 0; trial < 5_000; trial++) {
      const headers = randomTable(next, 0);
      const [estimate, actual] = [encodedTableSize(headers), actualSize(headers)];
      if (estimate < actual || estimate > actual + 8 * JSON.stringify(headers).length) violations.push({ headers, estimate, actual });
    }
    expect(violations).toEqual([]);
  });

  it.each<[string, Record<string, unknown>]>([
    ['an empty table', {}],
    ['a string', { tenant: 'acme' }],
    ['multi-byte text', { name: 'Zoë 😀', 'clé-€': '€€€' }],
    ['a number', { n: 1 }],
    ['a double', { d: 0.5 }],
    ['a large integer', { big: 2 ** 52 }],
    ['a boolean and null', { t: true, none: null }],
    ['undefined values, skipped', { gone: undefined, kept: 'x' }],
    ['a Buffer', { bytes: Buffer.alloc(1000) }],
    ['an array', { list: ['a', 1, null, [true]] }],
    ['a nested table', { outer: { inner: { deepest: 'x' } } }],
    ['a timestamp', { at: { '!': 'timestamp', value: 1_700_000_000 } }],
    ['a typed string', { s: { '!': 'string', value: 'typed' } }],
    [
      'an x-death',
      { 'x-death': [{ count: 1, reason: 'rejected', queue: 'q', time: { '!': 'timestamp', value: 1 }, exchange: '', 'routing-keys': ['k'] }] },
    ],
  ])('bounds %s', (_, headers) => {
    expect(encodedTableSize(headers)).toBeGreaterThanOrEqual(actualSize(headers));
  });

  it('counts exactly what the rules say for a simple table', () => {
    // 4 (table) + [1 + 6 (key) + 1 (tag) + 4 + 4 (value)] + [1 + 1 + 1 + 8] + [1 + 1 + 1 + 1]
    expect(encodedTableSize({ tenant: 'acme', n: 7, b: true })).toBe(4 + 16 + 11 + 4);
    expect(encodedTableSize({})).toBe(4);
  });

  it('counts inherited enumerable keys, as amqplib encodes them', () => {
    const headers = Object.create({ inherited: 'x'.repeat(100) }) as Record<string, unknown>;
    expect(encodedTableSize(headers)).toBeGreaterThanOrEqual(actualSize(headers));
    expect(encodedTableSize(headers)).toBeGreaterThan(100);
  });

  it('counts a Date generously (amqplib writes an empty table)', () => {
    expect(encodedTableSize({ when: new Date(0) })).toBeGreaterThanOrEqual(actualSize({ when: new Date(0) }));
  });

  it('measures 100 KB of headers as more than 100 KB', () => {
    const headers = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`h${i}`, 'x'.repeat(1000)]));
    expect(encodedTableSize(headers)).toBe(actualSize(headers));
    expect(encodedTableSize(headers)).toBeGreaterThan(100_000);
  });

  it.each<[string, () => Record<string, unknown>]>([
    ['a key over 255 bytes', () => ({ ['k'.repeat(256)]: 'v' })],
    ['a bigint', () => ({ n: BigInt(1) })],
    ['a symbol', () => ({ s: Symbol('s') })],
    ['a function', () => ({ f: () => 1 })],
    ['an undefined array element', () => ({ list: [1, undefined] })],
    ['an unknown typed value', () => ({ v: { '!': 'uuid', value: 'x' } })],
    [
      'a cycle',
      () => {
        const table: Record<string, unknown> = {};
        table.self = { again: table };
        return table;
      },
    ],
    [
      'a throwing getter',
      () =>
        Object.defineProperty({}, 'boom', {
          enumerable: true,
          get() {
            throw new Error('getter');
          },
        }),
    ],
    [
      'a hostile Proxy',
      () =>
        new Proxy(
          {},
          {
            ownKeys() {
              throw new Error('trap');
            },
          },
        ),
    ],
  ])('is Infinity for what amqplib cannot encode: %s', (_, make) => {
    expect(encodedTableSize(make())).toBe(Number.POSITIVE_INFINITY);
  });

  it('refuses the unencodable shapes that amqplib throws on, so Infinity is right', () => {
    expect(() => actualSize({ n: BigInt(1) })).toThrow();
    expect(() => actualSize({ list: [undefined] })).toThrow();
    expect(() => actualSize({ v: { '!': 'uuid', value: 'x' } })).toThrow();
  });

  it('shares a value seen twice without calling it a cycle', () => {
    const shared = { a: 'x' };
    const headers = { one: shared, two: [shared, shared] };
    expect(encodedTableSize(headers)).toBe(actualSize(headers));
  });

  it('survives nesting deep enough to overflow the stack', () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    expect(encodedTableSize(deep)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('encodedHeaderSize', () => {
  it('is the bytes one entry adds to a table', () => {
    expect(encodedHeaderSize('tenant', 'acme')).toBe(encodedTableSize({ tenant: 'acme' }) - encodedTableSize({}));
    expect(encodedHeaderSize('gone', undefined)).toBe(0);
    expect(encodedHeaderSize('n', BigInt(1))).toBe(Number.POSITIVE_INFINITY);
  });
});
