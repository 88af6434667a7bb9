import type { ClaimResult, IdempotencyStore } from '../core/idempotency/idempotency.store.js';
import { requireOneOf } from './store.options.js';

/** What the store needs of an ioredis client (`new Redis(...)`), so that ioredis stays an optional dependency. */
export interface RedisLikeClient {
  /** Runs a Lua script on the server (EVAL): each state change is one script, atomic. */
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  /** Closes the connection (only a client the store opened itself). */
  quit(): Promise<unknown>;
}

/** Options of RedisIdempotencyStore: where Redis is, and the keys' prefix. */
export interface RedisIdempotencyStoreOptions {
  /** A Redis URL; the store opens its own ioredis client on first use and closes it with the application. */
  url?: string;
  /** Or a client of yours (ioredis): used as it is, and left open. Give it `enableOfflineQueue: false` so that a down Redis fails fast. */
  client?: RedisLikeClient;
  /** Prepended to every key; default 'amqp-retry:once:'. */
  keyPrefix?: string;
}

const CLAIM = `local v = redis.call('GET', KEYS[1])
if not v then redis.call('SET', KEYS[1], 'c:' .. ARGV[1], 'PX', ARGV[2]) return 'claimed' end
if v == 'h' then return 'handled' end
return 'busy'`;
const RENEW = `if redis.call('GET', KEYS[1]) == 'c:' .. ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == 'c:' .. ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0`;
const MARK = `redis.call('SET', KEYS[1], 'h', 'PX', ARGV[1])
return 0`;

/**
 * An IdempotencyStore in Redis: one string key per message, `<keyPrefix><queue>:<message key>`, holding `c:<token>`
 * while claimed and `h` once handled, each with its expiry (PX): Redis deletes expired keys itself. Needs the
 * optional dependency `ioredis` when given a `url` (loaded on first use).
 * @example new RedisIdempotencyStore({ url: 'redis://127.0.0.1:6379' })
 */
export class RedisIdempotencyStore implements IdempotencyStore {
  private client?: Promise<RedisLikeClient>;
  private readonly prefix: string;
  private closed = false;

  constructor(private readonly options: RedisIdempotencyStoreOptions) {
    requireOneOf('RedisIdempotencyStore', options, 'url', 'client', "{ url: 'redis://127.0.0.1:6379' }");
    this.prefix = options.keyPrefix ?? 'amqp-retry:once:';
  }

  async claim(key: string, token: string, claimTtlMs: number): Promise<ClaimResult> {
    const result = await this.run(CLAIM, key, token, claimTtlMs);
    if (result === 'claimed' || result === 'handled' || result === 'busy') return result;
    throw new Error(`unexpected answer from Redis: ${String(result)}`);
  }

  async renew(key: string, token: string, claimTtlMs: number): Promise<boolean> {
    return Number(await this.run(RENEW, key, token, claimTtlMs)) === 1;
  }

  async release(key: string, token: string): Promise<void> {
    await this.run(RELEASE, key, token);
  }

  async markHandled(key: string, ttlMs: number): Promise<void> {
    await this.run(MARK, key, ttlMs);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    if (client && this.options.client === undefined) await (await client.catch(() => undefined))?.quit().catch(() => undefined);
  }

  private async run(script: string, key: string, ...args: Array<string | number>): Promise<unknown> {
    if (this.closed) throw new Error('the store is closed');
    const client = await (this.client ??= this.open());
    return client.eval(script, 1, this.prefix + key, ...args);
  }

  private async open(): Promise<RedisLikeClient> {
    if (this.options.client) return this.options.client;
    const { Redis } = await import('ioredis').catch((error: unknown) => {
      this.client = undefined;
      throw new Error(`RedisIdempotencyStore needs the package ioredis: npm install ioredis (${String(error)})`);
    });
    // No offline queue and one try per command: while Redis is down every call fails at once (the message is
    // retried through the tiers) instead of waiting in a queue; the client reconnects in the background.
    const client = new Redis(this.options.url as string, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 5_000,
      retryStrategy: (times) => Math.min(100 * times, 2_000),
    });
    client.on('error', () => undefined); // every failure reaches the caller of the command; no unhandled 'error'
    try {
      await client.connect();
    } catch (error) {
      // The first connection failed: try afresh next time (a client left reconnecting would be leaked otherwise).
      this.client = undefined;
      client.disconnect();
      throw error;
    }
    return client;
  }
}
