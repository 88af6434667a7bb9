import { RetryConfigError } from '../../errors/retry-config.error.js';
import { indexName, notifyChannel, qualifiedName, readSqlIdentifier } from './sql-identifier.reader.js';

describe('readSqlIdentifier', () => {
  it('takes plain identifiers up to 63 characters', () => {
    expect(readSqlIdentifier('orders_outbox', 'k')).toBe('orders_outbox');
    expect(readSqlIdentifier(`_${'a'.repeat(62)}`, 'k')).toHaveLength(63);
  });

  it.each([['x"; DROP TABLE orders; --'], ['public.outbox'], ['with space'], ['1starts_with_digit'], [''], ['a'.repeat(64)], ["o'brien"], ['tábla']])(
    'refuses %j, naming the option and the fix',
    (name) => {
      expect(() => readSqlIdentifier(name, 'RetryModule option "outbox.table"')).toThrow(RetryConfigError);
      expect(() => readSqlIdentifier(name, 'RetryModule option "outbox.table"')).toThrow(/"outbox\.table".*Use letters, digits and _/);
    },
  );

  it('refuses what is not a string', () => {
    expect(() => readSqlIdentifier(42, 'k')).toThrow('k is number');
  });

  it('quotes with or without a schema', () => {
    expect(qualifiedName('t')).toBe('"t"');
    expect(qualifiedName('t', 's')).toBe('"s"."t"');
  });
});

describe('indexName', () => {
  it('keeps <table>_<suffix> when it fits', () => {
    expect(indexName('orders_outbox', 'pending_idx')).toBe('orders_outbox_pending_idx');
  });

  it('cuts a long table name and adds a hash, within 63 bytes, distinct per table and suffix', () => {
    const a = 'a'.repeat(63);
    const b = `${'a'.repeat(62)}b`;
    const names = [indexName(a, 'pending_idx'), indexName(a, 'order_idx'), indexName(a, 'sent_idx'), indexName(b, 'pending_idx')];
    for (const name of names) expect(name.length).toBeLessThanOrEqual(63);
    expect(new Set(names).size).toBe(4);
    expect(names[0]).toMatch(/^a+_[0-9a-f]{8}_pending_idx$/);
    expect(indexName(a, 'pending_idx')).toBe(names[0]); // stable
  });
});

describe('notifyChannel', () => {
  it('is <schema>.<table>, or the table name without a schema', () => {
    expect(notifyChannel('orders_outbox', 'billing')).toBe('billing.orders_outbox');
    expect(notifyChannel('orders_outbox', 'shipping')).not.toBe(notifyChannel('orders_outbox', 'billing'));
    expect(notifyChannel('orders_outbox')).toBe('orders_outbox');
  });

  it('cuts a long name and adds a hash, within 63 bytes, distinct per schema and table, the same each time', () => {
    const [a, b] = ['a'.repeat(63), `${'a'.repeat(62)}b`];
    const channels = [notifyChannel(a, a), notifyChannel(a, b), notifyChannel(b, a), notifyChannel(`${'s'.repeat(60)}`, 'outbox')];
    for (const channel of channels) expect(channel.length).toBeLessThanOrEqual(63);
    expect(new Set(channels).size).toBe(4);
    expect(channels[0]).toMatch(/^a{54}_[0-9a-f]{8}$/);
    expect(notifyChannel(a, a)).toBe(channels[0]);
    expect(notifyChannel(a)).toBe(a); // 63 bytes fit
  });
});
