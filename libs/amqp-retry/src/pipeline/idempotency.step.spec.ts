import type { ConsumeMessage } from 'amqplib';
import type { ClaimResult, IdempotencyStore } from '../core/idempotency/idempotency.store.js';
import { readIdempotency } from '../core/idempotency/idempotency.config.js';
import type { RetryContext } from '../core/delivery/retry.context.js';
import { decideAfterFailure, retryabilityOf } from '../core/delivery/delivery.decision.js';
import { IdempotencyStoreError } from '../errors/idempotency-store.error.js';
import { MalformedMessageError } from '../errors/malformed-message.error.js';
import { idempotencyStep, storeKeyOf } from './idempotency.step.js';
import { withHandlerTimeout } from './time-limit.step.js';
import { HandlerTimeoutError } from '../errors/handler-timeout.error.js';

/** A store in memory, with a clock the test moves. Unit tests only: the e2e tests use Redis and PostgreSQL. */
class MemoryStore implements IdempotencyStore {
  readonly entries = new Map<string, { state: 'claimed' | 'handled'; token?: string; until: number }>();
  now = 0;
  down = false;
  readonly calls: string[] = [];

  private live(key: string) {
    const entry = this.entries.get(key);
    return entry && entry.until > this.now ? entry : undefined;
  }
  private check(op: string) {
    this.calls.push(op);
    if (this.down) throw new Error('connect ECONNREFUSED');
  }
  async claim(key: string, token: string, ttl: number): Promise<ClaimResult> {
    this.check('claim');
    const entry = this.live(key);
    if (entry) return entry.state === 'handled' ? 'handled' : 'busy';
    this.entries.set(key, { state: 'claimed', token, until: this.now + ttl });
    return 'claimed';
  }
  async renew(key: string, token: string, ttl: number) {
    this.check('renew');
    const entry = this.live(key);
    if (entry?.token !== token) return false;
    entry.until = this.now + ttl;
    return true;
  }
  async release(key: string, token: string) {
    this.check('release');
    if (this.live(key)?.token === token) this.entries.delete(key);
  }
  async markHandled(key: string, ttl: number) {
    this.check('markHandled');
    this.entries.set(key, { state: 'handled', until: this.now + ttl });
  }
}

const logger = { log: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
const context = (messageId?: string, signal = new AbortController().signal) =>
  ({
    attempt: 1,
    maxAttempts: 3,
    isLastAttempt: false,
    queue: 'q',
    deaths: [],
    signal,
    message: { properties: { messageId }, fields: {}, content: Buffer.alloc(0) } as unknown as ConsumeMessage,
  }) as RetryContext;

function setup(options: Record<string, unknown> = {}) {
  const store = new MemoryStore();
  const calls: unknown[] = [];
  let behaviour: () => Promise<unknown> = async () => 'done';
  const invoke = idempotencyStep(
    'orders:eu',
    readIdempotency({ store, ...options }, (k) => k),
    logger,
  )(async (payload) => {
    calls.push(payload);
    return behaviour();
  });
  return { store, calls, invoke, set: (b: () => Promise<unknown>) => (behaviour = b) };
}

describe('the idempotency step', () => {
  it('runs the first copy and records it; a later copy is acknowledged without a call', async () => {
    const { store, calls, invoke } = setup();
    await expect(invoke({ n: 1 }, context('m-1'))).resolves.toBe('done');
    await expect(invoke({ n: 1 }, context('m-1'))).resolves.toBeUndefined();
    expect(calls).toEqual([{ n: 1 }]);
    expect(store.entries.get(storeKeyOf('orders:eu', 'm-1'))).toMatchObject({ state: 'handled', until: 86_400_000 });
    expect(store.calls).toEqual(['claim', 'markHandled', 'claim']);
  });

  it('keys are per queue, with the queue encoded so that a ":" in it cannot collide', () => {
    expect(storeKeyOf('orders:eu', 'm')).toBe('orders%3Aeu:m');
    expect(storeKeyOf('orders', 'eu:m')).toBe('orders:eu:m');
  });

  it('a failure releases the claim, so that the retry runs', async () => {
    const { store, calls, invoke, set } = setup();
    set(async () => {
      throw new Error('boom');
    });
    await expect(invoke('a', context('m-2'))).rejects.toThrow('boom');
    expect(store.entries.size).toBe(0);
    set(async () => 'ok');
    await expect(invoke('a', context('m-2'))).resolves.toBe('ok');
    expect(calls).toHaveLength(2);
  });

  it('a call past its time limit keeps its claim until it ends: the retry waits instead of running beside it', async () => {
    const store = new MemoryStore();
    let running = 0;
    let overlapped = false;
    const ends: number[] = [];
    const slowFirst = async (_payload: unknown, ctx: RetryContext) => {
      running++;
      overlapped ||= running > 1;
      await new Promise((resolve) => setTimeout(resolve, ctx.attempt === 1 ? 200 : 5));
      ends.push(Date.now());
      running--;
      return 'done';
    };
    const invoke = idempotencyStep(
      'orders',
      readIdempotency({ store }, (k) => k),
      logger,
    )(withHandlerTimeout(slowFirst, 40, 'orders'));
    const started = Date.now();
    await expect(invoke('a', context('m-late'))).rejects.toBeInstanceOf(HandlerTimeoutError);
    await expect(invoke('a', { ...context('m-late'), attempt: 2 })).resolves.toBe('done');
    expect(overlapped).toBe(false);
    expect(ends).toHaveLength(2);
    expect(ends[1] - started).toBeGreaterThanOrEqual(200); // after the abandoned call, not at 40 ms
  });

  it('renews the claim of a call past its time limit while it runs on, so that it does not lapse under the retry', async () => {
    const store = new MemoryStore();
    Object.defineProperty(store, 'now', { get: () => Date.now() }); // the store's clock is the real one here
    let running = 0;
    let overlapped = false;
    const runsOn = async (_payload: unknown, ctx: RetryContext) => {
      running++;
      overlapped ||= running > 1;
      await new Promise((resolve) => setTimeout(resolve, ctx.attempt === 1 ? 900 : 5));
      running--;
      return 'done';
    };
    // The claim lasts 300 ms unless renewed (every 100 ms): without renewals after the timeout (500 ms), it lapses by
    // 800 ms, while the call runs to 900 ms. Margins of hundreds of ms: a busy machine delays a renewal by tens.
    const invoke = idempotencyStep(
      'orders',
      { ...readIdempotency({ store }, (k) => k), claimTtlMs: 300 }, // shorter than the options allow, to keep the test short
      logger,
    )(withHandlerTimeout(runsOn, 500, 'orders'));
    await expect(invoke('a', context('m-runs-on'))).rejects.toBeInstanceOf(HandlerTimeoutError);
    await expect(invoke('a', { ...context('m-runs-on'), attempt: 2 })).resolves.toBe('done');
    expect(overlapped).toBe(false);
  });

  it('a copy arriving while another runs waits, and is acknowledged once the first is recorded', async () => {
    const { calls, invoke, set } = setup();
    let finish!: () => void;
    set(() => new Promise((resolve) => (finish = () => resolve('first'))));
    const first = invoke('a', context('m-3'));
    await new Promise((resolve) => setImmediate(resolve));
    const second = invoke('a', context('m-3'));
    await new Promise((resolve) => setTimeout(resolve, 60)); // a few polls: still busy
    finish();
    await expect(first).resolves.toBe('first');
    await expect(second).resolves.toBeUndefined();
    expect(calls).toHaveLength(1);
  });

  it('a store that is down: IdempotencyStoreError, the handler not called, and always retryable', async () => {
    const { store, calls, invoke } = setup();
    store.down = true;
    const error: unknown = await invoke('a', context('m-4')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IdempotencyStoreError);
    expect(String(error)).toContain('failed to claim "q:m-4"'.replace('q:', 'orders%3Aeu:'));
    expect(calls).toEqual([]);
    expect(retryabilityOf(() => true)(error)).toBe(true);
    expect(decideAfterFailure(1, 3, true, 2, error)).toEqual({ action: 'retry', tier: 1 });
  });

  it('no message id parks as malformed (with the fix in the message); so does a key function that throws', async () => {
    const { invoke, calls } = setup();
    const error: unknown = await invoke('a', context(undefined)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedMessageError);
    expect(String(error)).toContain('give idempotency.key');
    expect(decideAfterFailure(1, 3, true, 2, error)).toEqual({ action: 'park', reason: 'malformed' });
    const keyed = setup({
      key: () => {
        throw new Error('no order id');
      },
    });
    await expect(keyed.invoke('a', context('m'))).rejects.toThrow('the idempotency key function threw: no order id');
    expect(calls).toEqual([]);
  });

  it('a record that fails after success is tried again, and the copy acknowledged', async () => {
    const { store, invoke, set } = setup({ claimTtl: '1s' });
    set(async () => {
      store.down = true;
      setTimeout(() => (store.down = false), 150);
      return 'done';
    });
    await expect(invoke('a', context('m-5'))).resolves.toBe('done');
    expect(store.calls.filter((c) => c === 'markHandled').length).toBeGreaterThan(1);
    expect(store.entries.get(storeKeyOf('orders:eu', 'm-5'))?.state).toBe('handled');
  });
});
