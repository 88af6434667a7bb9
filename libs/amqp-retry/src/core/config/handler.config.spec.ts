import { NonRetryableError } from '../../errors/non-retryable.error.js';
import { RetryConfigError } from '../../errors/retry-config.error.js';
import { assertDistinctQueues, resolveHandlerConfig } from './handler.config.js';
import { resolveModuleConfig } from './module.config.js';
import type { RetryHandlerOptions } from './retry.options.js';

const moduleConfig = resolveModuleConfig();
const resolve = (options: RetryHandlerOptions, module = moduleConfig) => resolveHandlerConfig(options, module, 'Orders.handle');
const prefix = (key: string) => `Invalid retry configuration: @RetryWithBackoff option "${key}" of Orders.handle`;

describe('resolveHandlerConfig', () => {
  it('fills the defaults from the module', () => {
    const config = resolve({ queue: 'orders' });
    expect(config).toMatchObject({
      queue: 'orders',
      exchange: undefined,
      exchangeType: 'topic',
      routingKeys: ['#'],
      delaysMs: [1_000, 10_000, 60_000],
      maxAttempts: 4,
      errorQueue: 'orders.error',
      prefetch: 20,
      queueType: 'classic',
    });
    expect(config.isRetryable(new Error('x'))).toBe(true);
    expect(config.isRetryable(new NonRetryableError('x'))).toBe(false);
  });

  it("gives a handler's inbox without an adapter the module's inbox adapter, and its own table", () => {
    const adapter = { execute: async () => ({ rows: [] }), transaction: async <T>(work: (tx: unknown) => Promise<T>) => work(undefined) };
    const withInbox = resolveModuleConfig({ inbox: { adapter } });
    const own = resolve({ queue: 'billing', inbox: { table: 'billing_inbox' } }, withInbox).inbox;
    expect(own?.adapter).toBe(adapter);
    expect(own?.tableName).toBe('billing_inbox');
    expect(resolve({ queue: 'billing' }, withInbox).inbox?.tableName).toBe('amqp_retry_inbox');
    const withOutbox = resolveModuleConfig({ outbox: { adapter } }); // the outbox's adapter when the module has no inbox
    expect(resolve({ queue: 'billing', inbox: { table: 'billing_inbox' } }, withOutbox).inbox?.adapter).toBe(adapter);
    expect(resolve({ queue: 'orders' }, withOutbox).inbox).toBeUndefined(); // no inbox for the others
    expect(() => resolve({ queue: 'billing', inbox: { table: 'billing_inbox' } })).toThrow(
      `${prefix('inbox.adapter')} is missing. Give pgOutboxAdapter(pool), typeormOutboxAdapter(dataSource), or an object implementing OutboxAdapter (docs/outbox.md), or give the module an inbox or an outbox (RetryModule's inbox: { adapter } or outbox: { adapter }), whose adapter it then uses.`,
    );
  });

  it("takes the handler's timeout, else the module's, and 0 turns a module's off", () => {
    expect(resolve({ queue: 'q' }).timeoutMs).toBe(0);
    expect(resolve({ queue: 'q', timeout: '1500ms' }).timeoutMs).toBe(1_500);
    const limited = resolveModuleConfig({ handlerTimeout: '30s' });
    expect(resolve({ queue: 'q' }, limited).timeoutMs).toBe(30_000);
    expect(resolve({ queue: 'q', timeout: 0 }, limited).timeoutMs).toBe(0);
    expect(() => resolve({ queue: 'q', timeout: '100y' })).toThrow(`${prefix('timeout')} has "100y", which is not a duration.`);
  });

  it('derives maxAttempts from the handler tiers unless set on the handler or the module', () => {
    expect(resolve({ queue: 'q', delays: ['1s'] }).maxAttempts).toBe(2);
    expect(resolve({ queue: 'q', delays: ['1s'], maxAttempts: 5 }).maxAttempts).toBe(5);
    expect(resolve({ queue: 'q', delays: ['1s'] }, resolveModuleConfig({ maxAttempts: 9 })).maxAttempts).toBe(9);
  });

  it('computes exponential tiers, capped, never shorter than asked', () => {
    expect(resolve({ queue: 'q', backoff: { initial: '1s', multiplier: 3, max: '20s', tiers: 4 } }).delaysMs).toEqual([1_000, 3_000, 9_000, 20_000]);
    expect(resolve({ queue: 'q', backoff: { initial: 100, multiplier: 1.5, tiers: 3 } }).delaysMs).toEqual([100, 150, 225]);
    expect(resolve({ queue: 'q', backoff: { initial: 1, multiplier: 1.1, tiers: 2 } }).delaysMs).toEqual([1, 2]);
  });

  it('gives backoff as many tiers as retries by default', () => {
    const config = resolve({ queue: 'q', backoff: { initial: '1s' }, maxAttempts: 6 });
    expect(config.delaysMs).toEqual([1_000, 2_000, 4_000, 8_000, 16_000]);
    expect(config.maxAttempts).toBe(6);
  });

  it('takes the queue type from the handler, else the module', () => {
    expect(resolve({ queue: 'q', queueType: 'quorum' }).queueType).toBe('quorum');
    expect(resolve({ queue: 'q' }, resolveModuleConfig({ queueType: 'quorum' })).queueType).toBe('quorum');
    expect(() => resolve({ queue: 'q', queueType: 'lazy' as 'quorum' })).toThrow(`${prefix('queueType')} is "lazy". Use 'classic' or 'quorum'.`);
  });

  it('accepts several routing keys and a custom error queue', () => {
    expect(resolve({ queue: 'q', exchange: 'x', routingKey: ['a.*', 'b.#'], errorQueue: 'dead' })).toMatchObject({
      exchange: 'x',
      routingKeys: ['a.*', 'b.#'],
      errorQueue: 'dead',
    });
  });

  const failures: Array<[string, RetryHandlerOptions, string]> = [
    ['an empty queue', { queue: '' }, `${prefix('queue')} is "". Give a non-empty name, e.g. 'orders.created'.`],
    [
      'a reserved queue name',
      { queue: 'amq.gen-1' },
      `${prefix('queue')} is "amq.gen-1": names starting with "amq." are reserved by RabbitMQ. Choose another name, e.g. 'orders.created'.`,
    ],
    [
      'a queue name too long for the derived names',
      { queue: 'q'.repeat(240) },
      `${prefix('queue')} is 240 bytes long. Use at most 223 bytes: AMQP names are limited to 255 and the library appends suffixes.`,
    ],
    ['zero attempts', { queue: 'q', maxAttempts: 0 }, `${prefix('maxAttempts')} is 0. Use a whole number from 1 to 1000000, e.g. 5.`],
    [
      'a bad delay',
      { queue: 'q', delays: ['1s', '2 weeks'] },
      `${prefix('delays')} has "2 weeks", which is not a duration. Use milliseconds (1500) or a number with a unit: '250ms', '5s', '2m', '1h', '3d', e.g. ['1s', '10s', '1m'].`,
    ],
    [
      'delays and backoff together',
      { queue: 'q', delays: ['1s'], backoff: { initial: '1s' } },
      `${prefix('delays')} is given together with "backoff". Give one of them: delays lists the tiers, backoff computes them.`,
    ],
    [
      'a shrinking multiplier',
      { queue: 'q', backoff: { initial: '1s', multiplier: 0.5 } },
      `${prefix('backoff.multiplier')} is 0.5. Use a number from 1 to 1000, e.g. 2.`,
    ],
    [
      'max below initial',
      { queue: 'q', backoff: { initial: '10s', max: '1s' } },
      `${prefix('backoff.max')} (1000 ms) is shorter than backoff.initial (10000 ms). Make max at least initial, or leave it out.`,
    ],
    [
      'an unknown exchange type',
      { queue: 'q', exchange: 'x', exchangeType: 'x-delayed' as 'topic' },
      `${prefix('exchangeType')} is "x-delayed". Use one of topic, direct, fanout, headers.`,
    ],
    [
      'no routing keys',
      { queue: 'q', exchange: 'x', routingKey: [] },
      `${prefix('routingKey')} is []. Give a binding key or a list of them, e.g. 'order.created' or ['order.*'].`,
    ],
    ['an empty exchange', { queue: 'q', exchange: '' }, `${prefix('exchange')} is "". Give a non-empty name, e.g. 'orders'.`],
    [
      'parking in its own queue',
      { queue: 'q', errorQueue: 'q' },
      `${prefix('errorQueue')} is the handler's own queue "q". Park elsewhere, e.g. 'q.error'.`,
    ],
    ...['q.dlx.dead', 'q.dlx', 'q.dlx.first', 'q.return', 'q.retry.plan', 'q.retry.1.1s.abcdef'].map(
      (errorQueue): [string, RetryHandlerOptions, string] => [
        `parking in ${errorQueue}, a name of its own topology`,
        { queue: 'q', errorQueue },
        `${prefix('errorQueue')} is "${errorQueue}", a name the retry topology of "q" derives (q.dlx*, q.retry.*, q.return). Park in a queue of its own, e.g. 'q.error'.`,
      ],
    ),
    ['a prefetch of 0', { queue: 'q', prefetch: 0 }, `${prefix('prefetch')} is 0. Use a whole number from 1 to 65535, e.g. 20.`],
    [
      'a nonRetryable that is neither',
      { queue: 'q', nonRetryable: ['Error'] as never },
      `${prefix('nonRetryable')} is neither a list of error classes nor a predicate. Use e.g. [ValidationError] or (error) => error instanceof ValidationError.`,
    ],
  ];

  it.each(failures)('rejects %s', (_, options, message) => {
    expect(() => resolve(options)).toThrow(RetryConfigError);
    expect(() => resolve(options)).toThrow(message);
  });

  it('names the key in the error object', () => {
    try {
      resolve({ queue: 'q', maxAttempts: -1 });
      throw new Error('did not throw');
    } catch (error) {
      expect(error).toMatchObject({ name: 'RetryConfigError', key: '@RetryWithBackoff option "maxAttempts" of Orders.handle' });
    }
  });
});

describe('assertDistinctQueues', () => {
  const entry = (queue: string, where: string, errorQueue?: string) => ({ config: resolve({ queue, errorQueue }), where });

  it('accepts distinct queues', () => {
    expect(() => assertDistinctQueues([entry('a', 'A.a'), entry('b', 'B.b')])).not.toThrow();
  });

  it('rejects two handlers on one queue, naming both', () => {
    expect(() => assertDistinctQueues([entry('a', 'A.a'), entry('a', 'B.b')])).toThrow(
      'Invalid retry configuration: @RetryWithBackoff option "queue" of B.b is "a", which A.a consumes already. Give each handler its own queue; to run two handlers on one message, bind two queues to the exchange.',
    );
  });

  it('rejects parking into another handler queue', () => {
    expect(() => assertDistinctQueues([entry('a', 'A.a', 'b'), entry('b', 'B.b')])).toThrow(
      `Invalid retry configuration: @RetryWithBackoff option "errorQueue" of A.a is "b", the queue that B.b consumes. Park in a queue of its own, e.g. 'a.error'.`,
    );
  });
});

describe('resolveHandlerConfig with partitions and long names', () => {
  const partitions = { count: 64, key: { header: 'x-account-id' } };

  it("refuses a queue name whose partitions' derived names would pass 255 bytes, naming the longest it takes", () => {
    expect(() => resolve({ queue: 'q'.repeat(223), delays: ['1s'] })).not.toThrow();
    expect(() => resolve({ queue: 'q'.repeat(220), partitions })).toThrow(
      `${prefix('queue')} is 220 bytes long. Use at most 219 bytes with 64 partitions: AMQP names are limited to 255, and each partition's names append ".p63" and the library's suffixes.`,
    );
    expect(resolve({ queue: 'q'.repeat(219), partitions }).queue).toHaveLength(219);
    expect(() => resolve({ queue: 'q'.repeat(220), partitions: { ...partitions, count: 8 } })).not.toThrow();
  });

  it('refuses a parking queue name that its partitions could not extend by ".p<i>"', () => {
    expect(() => resolve({ queue: 'orders', errorQueue: 'e'.repeat(252), partitions })).toThrow(RetryConfigError);
    expect(() => resolve({ queue: 'orders', errorQueue: 'e'.repeat(252), partitions })).toThrow(`${prefix('errorQueue')} is 252 bytes long`);
    expect(() => resolve({ queue: 'orders', errorQueue: 'e'.repeat(251), partitions })).not.toThrow();
  });

  it('names the first of several faults of a partitioned handler in a fixed order', () => {
    const named = (options: Partial<RetryHandlerOptions>) => {
      try {
        resolve({ queue: 'q', partitions, ...options });
      } catch (error) {
        return /option "([^"]+)"/.exec((error as Error).message)?.[1];
      }
      return undefined;
    };
    expect(named({ exchange: 'q', singleActiveConsumer: true, circuitBreaker: true, rateLimit: { calls: 5, per: '1s' } })).toBe('exchange');
    expect(named({ ordering: { key: { header: 'k' } }, exchange: 'q' })).toBe('ordering');
    expect(named({ singleActiveConsumer: true, circuitBreaker: 5 as never })).toBe('singleActiveConsumer');
    expect(named({ circuitBreaker: true, rateLimit: 7 as never })).toBe('circuitBreaker');
    expect(named({ rateLimit: 7 as never })).toBe('rateLimit');
  });
});
