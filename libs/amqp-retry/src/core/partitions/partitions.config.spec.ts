import type { ConsumeMessage } from 'amqplib';
import { resolveHandlerConfig } from '../config/handler.config.js';
import { resolveModuleConfig } from '../config/module.config.js';
import type { RetryHandlerOptions } from '../config/retry.options.js';
import { readPartitions } from './partitions.config.js';

const at = (key: string) => `@RetryWithBackoff option "${key}" of A.b`;
const resolve = (options: RetryHandlerOptions) => resolveHandlerConfig(options, resolveModuleConfig(), 'A.b');
const message = (headers: Record<string, unknown>, messageId?: string) => ({ properties: { headers, messageId } }) as unknown as ConsumeMessage;

describe('readPartitions', () => {
  it('hashes a header, keeps order by the same header, and fills the defaults', () => {
    const config = readPartitions({ count: 8, key: { header: 'x-account-id' } }, at);
    expect(config).toMatchObject({ count: 8, hashArguments: { 'hash-header': 'x-account-id' }, heartbeatMs: 1_000 });
    expect(config.ordering).toMatchObject({ whileRetrying: 'continue', holdGraceMs: 10_000 });
    expect(config.ordering.key(undefined, message({ 'x-account-id': 'a-1' }))).toBe('a-1');
  });

  it('hashes the message id with hash-property', () => {
    const config = readPartitions({ count: 2, key: 'messageId', whileRetrying: 'hold', holdGrace: '2s', heartbeat: '250ms' }, at);
    expect(config.hashArguments).toEqual({ 'hash-property': 'message_id' });
    expect(config.ordering).toMatchObject({ whileRetrying: 'hold', holdGraceMs: 2_000 });
    expect(config.heartbeatMs).toBe(250);
    expect(config.ordering.key(undefined, message({}, 'm-7'))).toBe('m-7');
  });

  it.each([
    [{ count: 0, key: 'messageId' }, 'partitions.count'],
    [{ count: 257, key: 'messageId' }, 'partitions.count'],
    [{ count: 1.5, key: 'messageId' }, 'partitions.count'],
    [{ count: 4, key: () => 'k' }, 'partitions.key'],
    [{ count: 4, key: { header: '' } }, 'partitions.key'],
    [{ count: 4, key: 'routingKey' }, 'partitions.key'],
    [{ count: 4, key: 'messageId', whileRetrying: 'wait' }, 'partitions.whileRetrying'],
    [{ count: 4, key: 'messageId', heartbeat: '10ms' }, 'partitions.heartbeat'],
    [null, 'partitions'],
  ])('refuses %j naming %s', (value, key) => {
    expect(() => readPartitions(value, at)).toThrow(`Invalid retry configuration: @RetryWithBackoff option "${key}" of A.b`);
  });
});

describe('partitions on a handler', () => {
  it('is read with the handler', () => {
    expect(resolve({ queue: 'accounts', partitions: { count: 3, key: 'messageId' } }).partitions?.count).toBe(3);
  });

  it('refuses ordering or singleActiveConsumer beside it, and an exchange named like the queue', () => {
    const partitions = { count: 3, key: 'messageId' as const };
    expect(() => resolve({ queue: 'q', partitions, ordering: { key: { header: 'h' } } })).toThrow(
      'option "ordering" of A.b is given together with "partitions"',
    );
    expect(() => resolve({ queue: 'q', partitions, singleActiveConsumer: true })).toThrow('"singleActiveConsumer" of A.b is given together');
    expect(() => resolve({ queue: 'q', partitions, exchange: 'q' })).toThrow('option "exchange" of A.b is "q", the queue\'s own name');
  });

  it('refuses a circuit breaker or a rate limit beside it, and the module defaults skip it', () => {
    const partitions = { count: 3, key: 'messageId' as const };
    expect(() => resolve({ queue: 'q', partitions, circuitBreaker: true })).toThrow(
      'option "circuitBreaker" of A.b is given together with "partitions"',
    );
    expect(() => resolve({ queue: 'q', partitions, rateLimit: { calls: 5, per: '1s' } })).toThrow(
      'option "rateLimit" of A.b is given together with "partitions"',
    );
    const module = resolveModuleConfig({ circuitBreaker: true, rateLimit: { calls: 5, per: '1s' } });
    const partitioned = resolveHandlerConfig({ queue: 'q', partitions }, module, 'A.b');
    expect([partitioned.circuitBreaker, partitioned.rateLimit]).toEqual([undefined, undefined]);
    expect(resolveHandlerConfig({ queue: 'q', partitions, circuitBreaker: false, rateLimit: false }, module, 'A.b').partitions?.count).toBe(3);
    const plain = resolveHandlerConfig({ queue: 'q' }, module, 'A.b');
    expect(plain.circuitBreaker?.minimumCalls).toBe(20);
    expect(plain.rateLimit).toMatchObject({ calls: 5, perMs: 1_000 });
  });
});
