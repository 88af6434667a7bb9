import { RetryConfigError } from '../../errors/retry-config.error.js';
import { qualifiedName, readSqlIdentifier } from './sql-identifier.reader.js';

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
