import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { PostgresIdempotencyStore, RedisIdempotencyStore, type ClaimResult, type IdempotencyStore } from 'nestjs-amqp-retry';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A store of one kind on a name space of its own (a uuid key prefix, a uuid-named table), and its removal. */
export interface TestStoreKind {
  name: 'redis' | 'postgres';
  /** The store under test; `port` points it elsewhere (a proxy, or a closed port: the store is down). */
  create(space: string, port?: number): IdempotencyStore;
  /** Whether the store holds a live record of a key (any state). */
  holds(space: string, key: string): Promise<boolean>;
  /** Deletes what the store wrote under `space`. */
  cleanUp(space: string): Promise<void>;
  /** The port of the real service, for a proxy in front of it. */
  port: number;
}

export const uniqueSpace = () => `e2e_once_${randomUUID().replace(/-/g, '').slice(0, 12)}`;

const withPort = (url: string, port: number | undefined) => {
  if (port === undefined) return url;
  const parsed = new URL(url);
  parsed.port = String(port);
  return parsed.toString();
};

export const redisKind: TestStoreKind = {
  name: 'redis',
  port: Number(new URL(REDIS_URL).port || 6379),
  create: (space, port) => new RedisIdempotencyStore({ url: withPort(REDIS_URL, port), keyPrefix: `${space}:` }),
  async holds(space, key) {
    const redis = new Redis(REDIS_URL);
    try {
      return (await redis.exists(`${space}:${key}`)) === 1;
    } finally {
      redis.disconnect();
    }
  },
  async cleanUp(space) {
    const redis = new Redis(REDIS_URL);
    try {
      const keys = await redis.keys(`${space}:*`);
      if (keys.length > 0) await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
  },
};

async function withPool<T>(run: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
  try {
    return await run(pool);
  } finally {
    await pool.end();
  }
}

export const postgresKind: TestStoreKind = {
  name: 'postgres',
  port: Number(new URL(POSTGRES_URL).port || 5432),
  create: (space, port) => new PostgresIdempotencyStore({ connectionString: withPort(POSTGRES_URL, port), table: space }),
  holds: (space, key) =>
    withPool(async (pool) => (await pool.query(`SELECT 1 FROM "${space}" WHERE key = $1 AND expires_at > clock_timestamp()`, [key])).rowCount === 1),
  cleanUp: (space) => withPool(async (pool) => void (await pool.query(`DROP TABLE IF EXISTS "${space}"`))),
};

/** Wraps a store and records what each claim answered, to see a concurrent copy wait. */
export function spied(store: IdempotencyStore): IdempotencyStore & { claims: ClaimResult[] } {
  const claims: ClaimResult[] = [];
  return {
    claims,
    claim: async (key, token, ttl) => {
      const result = await store.claim(key, token, ttl);
      claims.push(result);
      return result;
    },
    renew: (key, token, ttl) => store.renew(key, token, ttl),
    release: (key, token) => store.release(key, token),
    markHandled: (key, ttl) => store.markHandled(key, ttl),
    close: () => store.close?.() ?? Promise.resolve(),
  };
}
