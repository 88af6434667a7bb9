import { RetryConfigError } from '../../errors/retry-config.error.js';
import { resolveHandlerConfig } from './handler.config.js';
import { resolveModuleConfig } from './module.config.js';
import type { RetryHandlerOptions, RetryModuleOptions } from './retry.options.js';

const adapter = { execute: async () => [], transaction: async () => undefined };
const store = { claim: async () => 'claimed', renew: async () => true, release: async () => undefined, markHandled: async () => undefined };
const moduleOf = (options: Record<string, unknown>) => () => resolveModuleConfig(options as RetryModuleOptions);
const handlerOf = (options: Record<string, unknown>) => () =>
  resolveHandlerConfig({ queue: 'orders', ...options } as RetryHandlerOptions, resolveModuleConfig(), 'Orders.handle');

describe('a misspelt key inside an option object', () => {
  it.each([
    [
      'reconnect',
      { reconnect: { maxDelai: '5s' } },
      'RetryModule option "reconnect.maxDelai" is not an option of reconnect. Did you mean "maxDelay"?',
    ],
    [
      'delayedDelivery',
      { delayedDelivery: { prefx: 'billing.delay' } },
      'RetryModule option "delayedDelivery.prefx" is not an option of delayedDelivery. Did you mean "prefix"?',
    ],
    [
      'rateLimit',
      { rateLimit: { calls: 5, per: '1s', bursts: 2 } },
      'RetryModule option "rateLimit.bursts" is not an option of the rate limit. Did you mean "burst"?',
    ],
    [
      'circuitBreaker',
      { circuitBreaker: { openFr: '5s' } },
      'RetryModule option "circuitBreaker.openFr" is not an option of the circuit breaker. Did you mean "openFor"?',
    ],
    [
      'idempotency',
      { idempotency: { store, claimTTL: '1m' } },
      'RetryModule option "idempotency.claimTTL" is not an option of idempotency. Did you mean "claimTtl"?',
    ],
    [
      'outbox',
      { outbox: { adapter, pollIntervall: '2s' } },
      'RetryModule option "outbox.pollIntervall" is not an option of outbox. Did you mean "pollInterval"?',
    ],
    [
      'outbox.retryDelay',
      { outbox: { adapter, retryDelay: { maximum: '1m' } } },
      'RetryModule option "outbox.retryDelay.maximum" is not an option of outbox.retryDelay. Use only initial, max.',
    ],
    ['inbox', { inbox: { adapter, retension: '1d' } }, 'RetryModule option "inbox.retension" is not an option of inbox. Did you mean "retention"?'],
  ])('of the module (%s) is refused, naming it and the key it most likely meant', (_name, options, message) => {
    expect(moduleOf(options)).toThrow(RetryConfigError);
    expect(moduleOf(options)).toThrow(`Invalid retry configuration: ${message}`);
  });

  it.each([
    ['backoff', { backoff: { initial: '1s', multipler: 2 } }, 'backoff.multipler', 'backoff', 'multiplier'],
    ['ordering', { ordering: { key: () => 'k', whileRetryng: 'hold' } }, 'ordering.whileRetryng', 'ordering', 'whileRetrying'],
    ['ordering.key', { ordering: { key: { headr: 'x-customer-id' } } }, 'ordering.key.headr', 'ordering.key', 'header'],
    ['partitions', { partitions: { count: 4, key: 'messageId', heartbeats: '1s' } }, 'partitions.heartbeats', 'partitions', 'heartbeat'],
    ['partitions.key', { partitions: { count: 4, key: { header: 'x-a', hedaer: 'x-b' } } }, 'partitions.key.hedaer', 'partitions.key', 'header'],
    ['rateLimit', { rateLimit: { calls: 5, per: '1s', Burst: 2 } }, 'rateLimit.Burst', 'the rate limit', 'burst'],
    ['idempotency', { idempotency: { store, tll: '1d' } }, 'idempotency.tll', 'idempotency', 'ttl'],
    ['inbox', { inbox: { adapter, tabel: 'inbox' } }, 'inbox.tabel', 'inbox', 'table'],
  ])('of a handler (%s) is refused, naming it and the key it most likely meant', (_name, options, key, what, near) => {
    expect(handlerOf(options)).toThrow(
      `Invalid retry configuration: @RetryWithBackoff option "${key}" of Orders.handle is not an option of ${what}. Did you mean "${near}"?`,
    );
  });

  it('names every key there is when none is close', () => {
    expect(moduleOf({ reconnect: { jitter: 0.2 } })).toThrow(
      'RetryModule option "reconnect.jitter" is not an option of reconnect. Use only initialDelay, maxDelay.',
    );
  });

  it('is no error when every key is known', () => {
    expect(
      moduleOf({ reconnect: { initialDelay: '1s', maxDelay: '5s' }, delayedDelivery: { prefix: 'billing.delay', queueType: 'quorum' } }),
    ).not.toThrow();
    expect(handlerOf({ ordering: { key: { header: 'x-c' }, whileRetrying: 'hold', holdGrace: '1s' } })).not.toThrow();
  });
});
