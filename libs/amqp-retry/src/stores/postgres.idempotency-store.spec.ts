import { PostgresIdempotencyStore } from './postgres.idempotency-store.js';

const indexOf = (table: string) => {
  const store = new PostgresIdempotencyStore({ connectionString: 'postgres://unused', table });
  return store
    .migration()
    .at(-1)
    ?.match(/CREATE INDEX IF NOT EXISTS "([^"]+)"/)?.[1];
};

describe('PostgresIdempotencyStore.migration', () => {
  it('names its index after the table, and two long names that PostgreSQL would cut alike get indexes of their own', () => {
    expect(indexOf('amqp_retry_idempotency')).toBe('amqp_retry_idempotency_expires_at_idx');
    const [a, b] = [`${'k'.repeat(50)}_orders`, `${'k'.repeat(50)}_billing`].map(indexOf);
    expect(a).not.toBe(b);
    for (const name of [a, b]) expect(Buffer.byteLength(name ?? '')).toBeLessThanOrEqual(63);
  });
});

describe('PostgresIdempotencyStore options', () => {
  it('createTables takes true or false only, naming the option', () => {
    const create = (createTables: unknown) =>
      new PostgresIdempotencyStore({ connectionString: 'postgres://unused', createTables: createTables as boolean });
    expect(() => create(false)).not.toThrow();
    expect(() => create('false')).toThrow(/PostgresIdempotencyStore option "createTables".*Use true or false/s);
  });
});
