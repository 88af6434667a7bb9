import { jest } from '@jest/globals';
import { pgOutboxAdapter, type PgClientLike, type PgPoolLike } from './pg.outbox-adapter.js';
import { typeormOutboxAdapter, type TypeormDataSourceLike } from './typeorm.outbox-adapter.js';

const pool = (options?: { max?: number }): PgPoolLike => ({ connect: () => Promise.reject(new Error('unused')), ...(options && { options }) });

describe('pgOutboxAdapter', () => {
  it("tells the pool's size from pg's options", () => {
    expect(pgOutboxAdapter(pool({ max: 3 })).maxConnections?.()).toBe(3);
    expect(pgOutboxAdapter(pool()).maxConnections?.()).toBeUndefined();
  });

  it('refuses the pool itself as a transaction, running nothing', async () => {
    const query = jest.fn();
    const thePool = { totalCount: 1, idleCount: 1, query, connect: jest.fn() } as unknown as PgClientLike;
    await expect(pgOutboxAdapter(pool()).execute(thePool, 'SELECT 1', [])).rejects.toThrow(
      /pgOutboxAdapter: this is the pool, not a client in a transaction/,
    );
    expect(query).not.toHaveBeenCalled();
  });
});

describe('typeormOutboxAdapter', () => {
  const dataSource = (options: TypeormDataSourceLike['options']): TypeormDataSourceLike => ({
    options,
    transaction: () => Promise.reject(new Error('unused')),
    createQueryRunner: () => {
      throw new Error('unused');
    },
  });

  it("tells the pool's size: extra.max, else poolSize", () => {
    expect(typeormOutboxAdapter(dataSource({ poolSize: 5 })).maxConnections?.()).toBe(5);
    expect(typeormOutboxAdapter(dataSource({ poolSize: 5, extra: { max: 2 } })).maxConnections?.()).toBe(2);
    expect(typeormOutboxAdapter(dataSource({})).maxConnections?.()).toBeUndefined();
  });
});
