import { age, bodyCutNote, bytes, depth, duration, formatRate, headerRows, optionalCount, plural, preview, query, shortTier, stateOf } from './view.format.js';

describe('the page formatting', () => {
  it('writes depths, with a missing queue said so, and counts known only for own queues', () => {
    expect([depth(0), depth(12), depth(-1)]).toEqual(['0', '12', 'missing']);
    expect([optionalCount(3), optionalCount(undefined)]).toEqual(['3', '–']);
  });

  it("says the outbox's oldest waiting age in the unit that reads best", () => {
    expect([age(850), age(42_000), age(180_000)]).toEqual(['850 ms', '42 s', '3 min']);
  });

  it("shortens a tier's name by its queue's, and leaves another name alone", () => {
    expect(shortTier('orders', 'orders.retry.1.1s.ab12')).toBe('1s');
    expect(shortTier('shop.payments', 'shop.payments.retry.3.2m30s.ec8ec91')).toBe('2m30s');
    expect(shortTier('orders', 'orders.slow')).toBe('slow');
    expect(shortTier('orders', 'ordersx.retry.1.1s.ab12')).toBe('ordersx.retry.1.1s.ab12');
  });

  it('writes durations at a precision that fits them', () => {
    expect([duration(850), duration(1_250), duration(42_000), duration(180_000), duration(7_200_000)]).toEqual(['850 ms', '1.3 s', '42 s', '3 min', '2 h']);
  });

  it('writes rates per minute with a precision that fits their size, and – before two readings', () => {
    expect([formatRate(undefined), formatRate(0), formatRate(0.333), formatRate(12.34), formatRate(250.4)]).toEqual([
      '–',
      '0/min',
      '0.33/min',
      '12.3/min',
      '250/min',
    ]);
    expect(formatRate(Number.POSITIVE_INFINITY)).toBe('–');
  });

  it('shows a stack header with its real line breaks, not the escapes JSON would write, the library headers first', () => {
    const stack = 'Error: card declined\n    at charge (payments.ts:12:5)\n    at handle (orders.ts:40:3)';
    const rows = headerRows({ traceparent: '00-ab', 'x-retry-attempts': 3, 'x-exception-stack': stack, 'x-death': [{ count: 2 }] });
    expect(rows.map((r) => r.name)).toEqual(['x-death', 'x-exception-stack', 'x-retry-attempts', 'traceparent']);
    const shown = rows.find((r) => r.name === 'x-exception-stack');
    expect(shown).toEqual({ name: 'x-exception-stack', value: stack, multiline: true });
    expect(shown?.value).not.toContain('\\n');
    expect(rows.find((r) => r.name === 'x-retry-attempts')).toEqual({ name: 'x-retry-attempts', value: '3', multiline: false });
  });

  it('previews a body, cut at 160 characters, and says what a binary one is', () => {
    expect(preview({ body: 'x'.repeat(200), bodyEncoding: 'utf8' })).toBe(`${'x'.repeat(160)}…`);
    expect(preview({ body: 'AAAA', bodyEncoding: 'base64' })).toBe('(binary body, 3 bytes)');
    expect(preview({ body: 'AAAA', bodyEncoding: 'base64', bodyBytes: 20_000_000, bodyTruncated: true })).toBe('(binary body, 20000000 bytes)');
    expect(preview({ body: 'abc', bodyEncoding: 'utf8', bodyBytes: 9000, bodyTruncated: true })).toBe('abc…');
  });

  it('says where a body the list cut is whole, and nothing of one it holds whole', () => {
    expect(bodyCutNote({ bodyBytes: 20 * 1024 * 1024, bodyTruncated: true })).toBe(
      'Body of 20 MiB, cut in this list: Details shows it whole, Export downloads it whole.',
    );
    expect(bodyCutNote({ bodyBytes: 10, bodyTruncated: false })).toBe('');
    expect([bytes(512), bytes(16 * 1024), bytes(1.5 * 1024 * 1024)]).toEqual(['512 bytes', '16 KiB', '1.5 MiB']);
  });

  it('builds query strings without empty values, encoded', () => {
    expect(query({ queue: 'a b&c', reason: undefined, error: '', offset: 0 })).toBe('?queue=a%20b%26c&offset=0');
    expect(query({})).toBe('');
    expect([plural(1, 'message'), plural(2, 'message')]).toEqual(['1 message', '2 messages']);
  });

  it("puts a feature's state first in the State column, else whether anything consumes the queue", () => {
    expect(stateOf({ state: 'breaker open', consumers: 1 })).toEqual({ text: 'breaker open', tone: 'warn' });
    expect(stateOf({ consumers: 0 })).toEqual({ text: 'no consumer', tone: 'warn' });
    expect(stateOf({ consumers: 2 })).toEqual({ text: 'consuming (2)', tone: 'ok' });
    expect(stateOf({})).toEqual({ text: '–', tone: 'none' });
  });
});
