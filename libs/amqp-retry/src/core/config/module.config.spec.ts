import type { RetryModuleOptions } from './retry.options.js';
import { RetryConfigError } from '../../errors/retry-config.error.js';
import { maskUrl } from '../text/credentials.mask.js';
import { readModuleOptions, resolveModuleConfig } from './module.config.js';

describe('resolveModuleConfig', () => {
  it('has sensible defaults', () => {
    expect(resolveModuleConfig()).toEqual({
      url: 'amqp://guest:guest@localhost:5672',
      urls: ['amqp://guest:guest@localhost:5672'],
      delaysMs: [1_000, 10_000, 60_000],
      maxAttempts: undefined,
      prefetch: 20,
      queueType: 'classic',
      connectionName: undefined,
      delayPrefix: 'amqp-retry.delay',
      delayQueueType: 'classic',
      reconnect: { initialDelayMs: 100, maxDelayMs: 30_000 },
      publishTimeoutMs: 10_000,
      publishBufferSize: 1_000,
      confirmTimeoutMs: 10_000,
      connectTimeoutMs: 10_000,
      shutdownTimeoutMs: 30_000,
      handlerTimeoutMs: 0,
      deserializer: 'json',
      retryLogs: 'line',
      parkLogs: 'line',
    });
  });

  it("reads logging.parked ('line' by default, or 'stack') and refuses another word, a misspelt key or a non-object", () => {
    expect(resolveModuleConfig({ logging: { parked: 'stack' } })).toMatchObject({ retryLogs: 'line', parkLogs: 'stack' });
    expect(resolveModuleConfig({ logging: { retries: 'nest' } })).toMatchObject({ retryLogs: 'nest', parkLogs: 'line' });
    expect(() => resolveModuleConfig({ logging: { parked: 'error' as 'line' } })).toThrow(
      `Invalid retry configuration: RetryModule option "logging.parked" is "error". Use 'line' (one warning line per park, the default) or 'stack' (the line followed by the handler's stack).`,
    );
    expect(() => resolveModuleConfig({ logging: { park: 'stack' } as RetryModuleOptions['logging'] })).toThrow(
      'RetryModule option "logging.park" is not an option of logging. Did you mean "parked"? Use only retries, parked.',
    );
    expect(() => resolveModuleConfig({ logging: 'stack' as RetryModuleOptions['logging'] })).toThrow('RetryModule option "logging" is string');
    expect(() => resolveModuleConfig({ logging: { retries: 7 as unknown as 'line' } })).toThrow('RetryModule option "logging.retries" is a number');
  });

  it('takes the application name from the option or RETRY_APPLICATION, trimmed, and refuses what is not printable text', () => {
    expect(resolveModuleConfig({ application: ' orders-service ' }).application).toBe('orders-service');
    expect(resolveModuleConfig({}, { RETRY_APPLICATION: 'billing' }).application).toBe('billing');
    expect(resolveModuleConfig({ application: 'mine' }, { RETRY_APPLICATION: 'billing' }).application).toBe('mine');
    expect(resolveModuleConfig().application).toBeUndefined();
    for (const bad of ['', '  ', 'a\nb', 'x'.repeat(201), 42])
      expect(() => resolveModuleConfig({ application: bad as string })).toThrow(/RetryModule option "application" is .*printable text of 1 to 200/);
  });

  it('takes controlUsers as a list of broker user names (any user without it), and refuses anything else', () => {
    expect(resolveModuleConfig({ controlUsers: ['ops'] }).controlUsers).toEqual(['ops']);
    expect(resolveModuleConfig().controlUsers).toBeUndefined();
    for (const bad of ['ops', [''], [42], ['x'.repeat(256)]])
      expect(() => resolveModuleConfig({ controlUsers: bad as string[] })).toThrow(/RetryModule option "controlUsers" is .*e\.g\. \['ops'\]/);
  });

  it('refuses a publishTimeout under 100 ms, in which no channel could open, from the options or the environment', () => {
    expect(() => resolveModuleConfig({ publishTimeout: 0 })).toThrow(
      'Invalid retry configuration: RetryModule option "publishTimeout" is 0 ms: a publish opens a channel within it (a round trip to the broker), so a limit under 100 ms fails publishes, and the start, before the broker can answer. Use at least 100ms, e.g. \'10s\'.',
    );
    expect(() => resolveModuleConfig({ publishTimeout: '1ms' })).toThrow('option "publishTimeout" is 1 ms: a publish opens a channel');
    expect(() => resolveModuleConfig({}, { RETRY_PUBLISH_TIMEOUT: '99ms' })).toThrow('environment variable RETRY_PUBLISH_TIMEOUT is 99 ms');
    expect(resolveModuleConfig({ publishTimeout: '100ms' }).publishTimeoutMs).toBe(100);
  });

  it.each([undefined, null, [], 'amqp://rabbit'])("refuses %j as the options (what forRootAsync's factory returned), naming the fix", (options) => {
    expect(() => readModuleOptions(options)).toThrow(RetryConfigError);
    expect(() => readModuleOptions(options)).toThrow(
      `Invalid retry configuration: RetryModule options (what forRootAsync's factory returned) are ${options === undefined ? 'undefined' : JSON.stringify(options)}, not an options object. Return the options object from useFactory`,
    );
    const given = { url: 'amqp://rabbit' };
    expect(readModuleOptions(given)).toBe(given);
  });

  it('reads the time limits from the environment and refuses 0', () => {
    const config = resolveModuleConfig({}, { RETRY_CONFIRM_TIMEOUT: '2s', RETRY_CONNECT_TIMEOUT: '750ms' });
    expect(config).toMatchObject({ confirmTimeoutMs: 2_000, connectTimeoutMs: 750 });
    expect(() => resolveModuleConfig({ confirmTimeout: 0 })).toThrow(
      'Invalid retry configuration: RetryModule option "confirmTimeout" is 0 ms: a time limit of 0 would fail everything at once. Use a time limit above 0, e.g. \'10s\'.',
    );
  });

  it('takes every time limit up to 2^32-1 ms (about 49.7 days) as written, and names the longest spelling beyond it', () => {
    const longest = 2 ** 32 - 1;
    const config = resolveModuleConfig({
      publishTimeout: '30d',
      confirmTimeout: '30d',
      connectTimeout: longest,
      shutdownTimeout: '49d',
      reconnect: { initialDelay: '1s', maxDelay: '30d' },
    });
    expect(config).toMatchObject({
      publishTimeoutMs: 30 * 86_400_000,
      confirmTimeoutMs: 30 * 86_400_000,
      connectTimeoutMs: longest,
      shutdownTimeoutMs: 49 * 86_400_000,
      reconnect: { initialDelayMs: 1_000, maxDelayMs: 30 * 86_400_000 },
    });
    expect(() => resolveModuleConfig({}, { RETRY_SHUTDOWN_TIMEOUT: '50d' })).toThrow(
      'Invalid retry configuration: environment variable RETRY_SHUTDOWN_TIMEOUT has "50d", longer than the longest time limit the library takes (about 49 days). Use at most 49d.',
    );
    expect(() => resolveModuleConfig({ connectTimeout: longest + 1 })).toThrow('option "connectTimeout" has 4294967296, longer than');
  });

  it('takes a handler timeout from the option or RETRY_HANDLER_TIMEOUT, none by default, and refuses a bad one by name', () => {
    expect(resolveModuleConfig({ handlerTimeout: '30s' }).handlerTimeoutMs).toBe(30_000);
    expect(resolveModuleConfig({}, { RETRY_HANDLER_TIMEOUT: '2m' }).handlerTimeoutMs).toBe(120_000);
    expect(resolveModuleConfig({ handlerTimeout: 0 }).handlerTimeoutMs).toBe(0);
    // `timeout`, the name of the handler option it is the default of: the same option, and it beats the environment.
    expect(resolveModuleConfig({ timeout: '45s' }, { RETRY_HANDLER_TIMEOUT: '2m' }).handlerTimeoutMs).toBe(45_000);
    expect(resolveModuleConfig({ timeout: '45s', handlerTimeout: '45s' }).handlerTimeoutMs).toBe(45_000);
    expect(() => resolveModuleConfig({ timeout: '45s', handlerTimeout: '1m' })).toThrow('They are the same option: give one of them.');
    expect(() => resolveModuleConfig({ timeout: 'soon' })).toThrow('RetryModule option "timeout" has "soon", which is not a duration.');
    expect(() => resolveModuleConfig({ handlerTimeout: 'soon' })).toThrow(
      `Invalid retry configuration: RetryModule option "handlerTimeout" has "soon", which is not a duration.`,
    );
    expect(() => resolveModuleConfig({}, { RETRY_HANDLER_TIMEOUT: '-1s' })).toThrow('environment variable RETRY_HANDLER_TIMEOUT');
  });

  it('takes a deserializer and refuses anything else, naming the fix', () => {
    const parse = (content: Buffer) => content.toString('latin1');
    expect(resolveModuleConfig({ deserializer: 'raw' }).deserializer).toBe('raw');
    expect(resolveModuleConfig({ deserializer: parse }).deserializer).toBe(parse);
    expect(() => resolveModuleConfig({ deserializer: 'xml' as never })).toThrow(
      `Invalid retry configuration: RetryModule option "deserializer" is "xml". Use 'json', 'raw', or a function (content: Buffer, message) => payload.`,
    );
  });

  it('reads the environment', () => {
    const env = {
      AMQP_URL: 'amqp://u:p@rabbit:5672/v',
      RETRY_DELAYS: '250ms, 5s,2m',
      RETRY_MAX_ATTEMPTS: '7',
      RETRY_PREFETCH: '50',
      RETRY_PUBLISH_TIMEOUT: '2s',
      RETRY_SHUTDOWN_TIMEOUT: '1m',
      RETRY_QUEUE_TYPE: 'quorum',
    };
    expect(resolveModuleConfig({}, env)).toMatchObject({
      url: 'amqp://u:p@rabbit:5672/v',
      delaysMs: [250, 5_000, 120_000],
      maxAttempts: 7,
      prefetch: 50,
      publishTimeoutMs: 2_000,
      shutdownTimeoutMs: 60_000,
      queueType: 'quorum',
    });
  });

  it.each(['0x10', '1e1', '0b11', '7.0', '+7'])('refuses %p as a whole number from the environment, naming the variable', (value) => {
    expect(() => resolveModuleConfig({}, { RETRY_MAX_ATTEMPTS: value })).toThrow(
      `environment variable RETRY_MAX_ATTEMPTS is ${JSON.stringify(value)}. Use a whole number from 1 to`,
    );
  });

  it('prefers options to the environment, and ignores blank variables', () => {
    const config = resolveModuleConfig({ delays: [100], prefetch: 5 }, { RETRY_DELAYS: '1s', RETRY_PREFETCH: '9', RETRY_MAX_ATTEMPTS: ' ' });
    expect(config).toMatchObject({ delaysMs: [100], prefetch: 5, maxAttempts: undefined });
  });

  it('reads the reconnection policy and the publish buffer', () => {
    expect(resolveModuleConfig({ reconnect: { initialDelay: '50ms', maxDelay: '5s' }, publishBufferSize: 10 })).toMatchObject({
      reconnect: { initialDelayMs: 50, maxDelayMs: 5_000 },
      publishBufferSize: 10,
    });
    expect(resolveModuleConfig({ reconnect: { initialDelay: '1m' } }).reconnect).toEqual({ initialDelayMs: 60_000, maxDelayMs: 60_000 });
  });

  it('turns delayed delivery off, or gives it a prefix of its own', () => {
    expect(resolveModuleConfig({ delayedDelivery: false }).delayPrefix).toBeUndefined();
    expect(resolveModuleConfig({ delayedDelivery: { prefix: 'billing.delay' } }).delayPrefix).toBe('billing.delay');
    expect(resolveModuleConfig({ delayedDelivery: {} }).delayPrefix).toBe('amqp-retry.delay');
    expect(() => resolveModuleConfig({ delayedDelivery: { prefix: '' } })).toThrow(
      `Invalid retry configuration: RetryModule option "delayedDelivery.prefix" is "". Give a non-empty name, e.g. 'billing.delay'.`,
    );
  });

  it("gives the delay ladder the module's queue type unless told otherwise", () => {
    expect(resolveModuleConfig({}).delayQueueType).toBe('classic');
    expect(resolveModuleConfig({ queueType: 'quorum' }).delayQueueType).toBe('quorum');
    expect(resolveModuleConfig({}, { RETRY_QUEUE_TYPE: 'quorum' }).delayQueueType).toBe('quorum');
    expect(resolveModuleConfig({ queueType: 'quorum', delayedDelivery: { queueType: 'classic' } }).delayQueueType).toBe('classic');
    expect(resolveModuleConfig({ delayedDelivery: { queueType: 'quorum' } }).delayQueueType).toBe('quorum');
    expect(() => resolveModuleConfig({ delayedDelivery: { queueType: 'stream' as 'quorum' } })).toThrow(
      `Invalid retry configuration: RetryModule option "delayedDelivery.queueType" is "stream". Use 'classic' or 'quorum'.`,
    );
    expect(() => resolveModuleConfig({ delayedDelivery: 'yes' as unknown as boolean })).toThrow(/delayedDelivery" is "yes"/);
    expect(() => resolveModuleConfig({ delayedDelivery: { prefix: 'billing.quorum' } })).toThrow(
      /delayedDelivery.prefix" is "billing.quorum": ".quorum" ends the names of quorum ladders. Choose a prefix/,
    );
  });

  it('does not mutate the options', () => {
    const options = Object.freeze({ delays: Object.freeze(['1s']) as string[] });
    expect(() => resolveModuleConfig(options)).not.toThrow();
  });

  const failures: Array<[string, Parameters<typeof resolveModuleConfig>[0], Record<string, string>, string]> = [
    [
      'a bad duration in the environment',
      {},
      { RETRY_DELAYS: '1s,5x' },
      `Invalid retry configuration: environment variable RETRY_DELAYS has "5x", which is not a duration. Use milliseconds (1500) or a number with a unit: '250ms', '5s', '2m', '1h', '3d', e.g. '1s,10s,1m'.`,
    ],
    [
      'zero attempts in the environment',
      {},
      { RETRY_MAX_ATTEMPTS: '0' },
      'Invalid retry configuration: environment variable RETRY_MAX_ATTEMPTS is "0". Use a whole number from 1 to 1000000, e.g. 5.',
    ],
    [
      'a fractional prefetch option',
      { prefetch: 2.5 },
      {},
      'Invalid retry configuration: RetryModule option "prefetch" is 2.5. Use a whole number from 1 to 65535, e.g. 20.',
    ],
    [
      'an empty delay list',
      { delays: [] },
      {},
      `Invalid retry configuration: RetryModule option "delays" is []. Give at least one delay, e.g. '1s,10s,1m'.`,
    ],
    [
      'a negative delay',
      { delays: ['1s', -5] },
      {},
      `Invalid retry configuration: RetryModule option "delays" has -5, which is not a duration. Use milliseconds (1500) or a number with a unit: '250ms', '5s', '2m', '1h', '3d', e.g. '1s,10s,1m'.`,
    ],
    [
      'a delay beyond the largest TTL',
      { delays: ['60d'] },
      {},
      `Invalid retry configuration: RetryModule option "delays" has "60d", longer than RabbitMQ's largest TTL (about 49 days). Use at most 49d.`,
    ],
    [
      'a reconnect maxDelay below initialDelay',
      { reconnect: { initialDelay: '5s', maxDelay: '1s' } },
      {},
      'Invalid retry configuration: RetryModule option "reconnect" has initialDelay 5000 ms and maxDelay 1000 ms. Use an initialDelay above 0 and a maxDelay at least as long.',
    ],
    [
      'a bad shutdown timeout in the environment',
      {},
      { RETRY_SHUTDOWN_TIMEOUT: 'forever' },
      `Invalid retry configuration: environment variable RETRY_SHUTDOWN_TIMEOUT has "forever", which is not a duration. Use milliseconds (1500) or a number with a unit: '250ms', '5s', '2m', '1h', '3d', e.g. '30s'.`,
    ],
    [
      'an unknown queue type in the environment',
      {},
      { RETRY_QUEUE_TYPE: 'stream' },
      `Invalid retry configuration: environment variable RETRY_QUEUE_TYPE is "stream". Use 'classic' or 'quorum'.`,
    ],
    [
      'a URL that is not AMQP, password masked',
      {},
      { AMQP_URL: 'http://user:s3cret@host' },
      'Invalid retry configuration: environment variable AMQP_URL is "http://user:***@host". Use an AMQP URL such as amqp://user:password@host:5672/vhost.',
    ],
  ];

  it.each(failures)('rejects %s with a message naming the key and the fix', (_, options, env, message) => {
    expect(() => resolveModuleConfig(options, env)).toThrow(new RetryConfigError('x', 'y', 'z').constructor as typeof RetryConfigError);
    expect(() => resolveModuleConfig(options, env)).toThrow(message);
  });

  it('masks the password when the URL is AMQP-shaped but invalid', () => {
    expect(() => resolveModuleConfig({ url: 'amqp:///nohost' })).toThrow(
      'Invalid retry configuration: RetryModule option "url" is "amqp:///nohost".',
    );
    expect(() => resolveModuleConfig({ url: 'amqps://admin:hunter2@' })).toThrow(/amqps:\/\/admin:\*\*\*@"/);
  });
});

describe('resolveModuleConfig: the brokers', () => {
  const a = 'amqp://u:p@n1:5672';
  const b = 'amqp://u:p@n2:5672';

  it('takes the nodes of a cluster from "urls" or from a comma-separated AMQP_URL, in order', () => {
    expect(resolveModuleConfig({ urls: [a, b] })).toMatchObject({ url: a, urls: [a, b] });
    expect(resolveModuleConfig({}, { AMQP_URL: ` ${b} , ${a} ` })).toMatchObject({ url: b, urls: [b, a] });
    expect(resolveModuleConfig({ url: a }, { AMQP_URL: b })).toMatchObject({ urls: [a] });
    expect(resolveModuleConfig({}, { AMQP_URL: a })).toMatchObject({ urls: [a] });
  });

  it.each([
    [{ url: a, urls: [b] }, {}, 'RetryModule options "url" and "urls" are both set. Give one: "urls" for the nodes of a cluster'],
    [{ urls: [] }, {}, 'RetryModule option "urls" is an empty list. Give an array of AMQP URLs'],
    [{ urls: [a, 'http://u:secret@x'] }, {}, 'RetryModule option "urls" has "http://u:***@x" as entry 2, which is not an AMQP URL'],
    [{ urls: [a, a] }, {}, 'RetryModule option "urls" lists "amqp://u:***@n1:5672" twice. List each node once.'],
    [{ url: `${a},${b}` }, {}, 'RetryModule option "url" is "amqp://u:***@n2:5672", a list. Give the nodes of a cluster as the option "urls"'],
    [{}, { AMQP_URL: `${a},` }, 'environment variable AMQP_URL has "" as entry 2, which is not an AMQP URL. Separate AMQP URLs with commas'],
    [{}, { AMQP_URL: `${a},${a}` }, 'environment variable AMQP_URL lists "amqp://u:***@n1:5672" twice'],
  ])('refuses %j %j naming the key and the fix', (options, env, message) => {
    expect(() => resolveModuleConfig(options as never, env)).toThrow(`Invalid retry configuration: ${message}`);
  });
});

describe('configuration errors never show a password', () => {
  it.each(['pa/ss', 'p?ss', 'p#ss', 'a/b@c:d%e', 'x/5672'])(
    'names an unencoded password %p as such, masked, for url, urls and AMQP_URL',
    (password) => {
      const url = `amqp://app:${password}@rabbit:5672/vh`;
      const expected =
        "has a '/', '?' or '#' before its last '@', so its user or password is not percent-encoded. Percent-encode the user and password (encodeURIComponent)";
      const cases: Array<[RetryModuleOptions, Record<string, string>]> = [
        [{ url }, {}],
        [{ urls: ['amqp://h1', url] }, {}],
        [{}, { AMQP_URL: url }],
        [{}, { AMQP_URL: `amqp://h1,${url}` }],
      ];
      for (const [options, env] of cases) {
        let message = '';
        try {
          resolveModuleConfig(options, env);
        } catch (error) {
          message = (error as Error).message;
        }
        expect(message).toContain(expected);
        expect(message).toContain('"amqp://app:***@rabbit:5672/vh"');
        expect(message).not.toContain(password);
      }
    },
  );

  it.each(['p@ss', 'p:ss', 'p%ss', 'pässwörd', ''])(
    'takes the password %p, which a URL parser reads, and masks it in every other error',
    (password) => {
      const url = `amqp://app:${password}@rabbit:5672`;
      expect(resolveModuleConfig({ url }).url).toBe(url);
      expect(() => resolveModuleConfig({ urls: [url, url] })).toThrow('lists "amqp://app:***@rabbit:5672" twice');
    },
  );
});

describe('maskUrl', () => {
  it.each([
    ['amqp://guest:guest@localhost:5672', 'amqp://guest:***@localhost:5672'],
    ['amqps://u:p%40ss@h/vh?heartbeat=10', 'amqps://u:***@h/vh?heartbeat=10'],
    ['amqp://localhost', 'amqp://localhost'],
    ['amqp://user@host', 'amqp://user@host'],
  ])('masks %s', (url, masked) => {
    expect(maskUrl(url)).toBe(masked);
  });
});
