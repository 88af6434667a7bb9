import type { ConsumeMessage } from 'amqplib';
import { RetryConfigError } from '../../errors/retry-config.error.js';
import { resolveHandlerConfig } from '../config/handler.config.js';
import { DEFAULT_CLAIM_TTL_MS, DEFAULT_IDEMPOTENCY_TTL_MS, readIdempotency } from './idempotency.config.js';
import { readOrdering } from '../ordering/ordering.config.js';
import type { IdempotencyStore } from './idempotency.store.js';
import { resolveModuleConfig } from '../config/module.config.js';
import { planRetryTopology } from '../topology/retry-topology.plan.js';

const store: IdempotencyStore = {
  claim: async () => 'claimed',
  renew: async () => true,
  release: async () => undefined,
  markHandled: async () => undefined,
};
const at = (key: string) => `option "${key}"`;

describe('idempotency and ordering configuration', () => {
  it('defaults: the message id as key, records kept 1 day, claims of 30 s', () => {
    const config = readIdempotency({ store }, at);
    expect(config).toMatchObject({ store, keyIsMessageId: true, ttlMs: DEFAULT_IDEMPOTENCY_TTL_MS, claimTtlMs: DEFAULT_CLAIM_TTL_MS });
    expect(readIdempotency({ store, ttl: '7d', claimTtl: '2m', key: () => 'k' }, at)).toMatchObject({
      keyIsMessageId: false,
      ttlMs: 7 * 86_400_000,
      claimTtlMs: 120_000,
    });
  });

  it('refuses a store that lacks methods, a key that is no function, bad durations, a ttl shorter than the claim', () => {
    expect(() => readIdempotency({}, at)).toThrow('option "idempotency.store" is missing');
    expect(() => readIdempotency({ store: { claim: () => 1 } }, at)).toThrow('lacks renew, release, markHandled');
    expect(() => readIdempotency({ store, key: 'id' }, at)).toThrow('option "idempotency.key" is not a function');
    expect(() => readIdempotency({ store, ttl: 'soon' }, at)).toThrow(RetryConfigError);
    expect(() => readIdempotency({ store, claimTtl: '10ms' }, at)).toThrow('option "idempotency.claimTtl" is 10 ms');
    expect(() => readIdempotency({ store, ttl: '10s', claimTtl: '30s' }, at)).toThrow('is shorter than claimTtl');
    expect(() => readIdempotency({ store, ttl: '400d' }, at)).toThrow('option "idempotency.ttl" has "400d", longer than a year. Use at most 366d.');
  });

  it('takes claims and holds far beyond a single Node timer (renewed and ended by chained timers)', () => {
    expect(readIdempotency({ store, claimTtl: '100d', ttl: '366d' }, at)).toMatchObject({ claimTtlMs: 100 * 86_400_000, ttlMs: 366 * 86_400_000 });
    expect(readOrdering({ key: () => 'k', holdGrace: '30d' }, at).holdGraceMs).toBe(30 * 86_400_000);
  });

  it('ordering: a function or a header; whileRetrying continue (default) or hold', () => {
    const byHeader = readOrdering({ key: { header: 'x-customer' } }, at);
    const delivery = { properties: { headers: { 'x-customer': 'c1' } } } as unknown as ConsumeMessage;
    expect(byHeader.key({}, delivery)).toBe('c1');
    expect(byHeader).toMatchObject({ whileRetrying: 'continue', holdGraceMs: 10_000 });
    expect(readOrdering({ key: () => 'k', whileRetrying: 'hold', holdGrace: '1s' }, at)).toMatchObject({ whileRetrying: 'hold', holdGraceMs: 1_000 });
    expect(() => readOrdering({ key: 'customerId' }, at)).toThrow('option "ordering.key" is customerId');
    expect(() => readOrdering({ key: () => 'k', whileRetrying: 'wait' }, at)).toThrow(`Use 'continue' or 'hold'`);
  });

  it("a handler takes the module's idempotency unless it gives its own or false", () => {
    const module = resolveModuleConfig({ idempotency: { store } });
    const own = { ...store };
    expect(resolveHandlerConfig({ queue: 'q' }, module, 'H.m').idempotency?.store).toBe(store);
    expect(resolveHandlerConfig({ queue: 'q', idempotency: { store: own } }, module, 'H.m').idempotency?.store).toBe(own);
    expect(resolveHandlerConfig({ queue: 'q', idempotency: false }, module, 'H.m').idempotency).toBeUndefined();
    expect(() => resolveHandlerConfig({ queue: 'q', idempotency: { store: {} as IdempotencyStore } }, module, 'H.m')).toThrow(
      '@RetryWithBackoff option "idempotency.store" of H.m lacks',
    );
  });

  it('singleActiveConsumer adds x-single-active-consumer to the queue, and only then', () => {
    const module = resolveModuleConfig({});
    const args = (sac?: boolean) =>
      planRetryTopology(resolveHandlerConfig({ queue: 'q', singleActiveConsumer: sac }, module, 'H.m')).queues[0].arguments;
    expect(args(true)).toMatchObject({ 'x-single-active-consumer': true });
    expect(args(false)).not.toHaveProperty('x-single-active-consumer');
    expect(args()).not.toHaveProperty('x-single-active-consumer');
    expect(() => resolveHandlerConfig({ queue: 'q', singleActiveConsumer: 'yes' as never }, module, 'H.m')).toThrow('Use true or false');
  });
});
