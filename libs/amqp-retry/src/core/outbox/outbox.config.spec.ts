import { RetryConfigError } from '../../errors/retry-config.error.js';
import type { OutboxAdapter } from './outbox.adapter.js';
import { readInbox, readOutbox } from './outbox.config.js';

const adapter: OutboxAdapter = { execute: async () => ({ rows: [] }), transaction: async (work) => work(undefined) };
const at = (key: string) => `RetryModule option "${key}"`;

describe('readOutbox', () => {
  it('fills in the defaults', () => {
    const config = readOutbox({ adapter }, at);
    expect(config).toMatchObject({
      tableName: 'amqp_retry_outbox',
      createTables: true,
      relay: true,
      batchSize: 100,
      concurrency: 2,
      pollIntervalMs: 1_000,
      retentionMs: 86_400_000,
      retry: { backoff: { initialDelayMs: 500, maxDelayMs: 30_000 }, maxUnroutableAttempts: 10 },
    });
    expect(config.sql.channel).toBe('amqp_retry_outbox');
  });

  it('takes a table and a schema', () => {
    const config = readOutbox({ adapter, table: 'orders_outbox', schema: 'billing', retryDelay: { initial: '1s', max: '1m' } }, at);
    expect(config.tableName).toBe('billing.orders_outbox');
    expect(config.sql.insert).toContain('"billing"."orders_outbox"');
    expect(config.retry.backoff).toEqual({ initialDelayMs: 1_000, maxDelayMs: 60_000 });
  });

  it.each([
    [{ adapter, table: 'x"; DROP TABLE orders; --' }, /"outbox\.table" is "x\\"; DROP TABLE orders; --"\. Use letters/],
    [{ adapter, schema: 'public.x' }, /"outbox\.schema" is "public\.x"/],
    [{}, /"outbox\.adapter" is missing\. Give pgOutboxAdapter\(pool\)/],
    [{ adapter: { execute: () => undefined } }, /"outbox\.adapter" lacks transaction/],
    [{ adapter: { ...adapter, listen: 'yes' } }, /"outbox\.adapter\.listen" is not a function/],
    [{ adapter, batchSize: 0 }, /"outbox\.batchSize"/],
    [{ adapter, concurrency: 0 }, /"outbox\.concurrency"/],
    [{ adapter, pollInterval: '1ms' }, /"outbox\.pollInterval"/],
    [{ adapter, retryDelay: { initial: '10s', max: '1s' } }, /"outbox\.retryDelay\.max" \(1000 ms\) is shorter than initial/],
    [{ adapter, relay: 'yes' }, /"outbox\.relay" is "yes"\. Use true or false/],
    [null, /"outbox" is null\. Give \{ adapter/],
  ])('refuses %j, naming the key and the fix', (options, message) => {
    expect(() => readOutbox(options, at)).toThrow(RetryConfigError);
    expect(() => readOutbox(options, at)).toThrow(message);
  });
});

describe('readInbox', () => {
  const here = (key: string) => `@RetryWithBackoff option "${key}" of H.handle`;

  it('fills in the defaults: the message id, kept 7 days', () => {
    const config = readInbox({ adapter }, here);
    expect(config).toMatchObject({ tableName: 'amqp_retry_inbox', keyIsMessageId: true, retentionMs: 7 * 86_400_000, createTables: true });
    expect(config.sql.inboxRecord).toContain('"amqp_retry_inbox"');
  });

  it('refuses a hostile table and a key that is not a function', () => {
    expect(() => readInbox({ adapter, table: 'inbox; DELETE' }, here)).toThrow(/option "inbox\.table" of H\.handle is "inbox; DELETE"/);
    expect(() => readInbox({ adapter, key: 'id' }, here)).toThrow(/"inbox\.key" of H\.handle is not a function/);
  });
});
