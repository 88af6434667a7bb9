import { RetryConfigError } from '../../errors/retry-config.error.js';
import { readBrokerUrls } from './broker-urls.reader.js';
import {
  type DurationRange,
  POSITIVE_TIME_LIMIT_RANGE,
  readDelays,
  readDeserializer,
  readDuration,
  readInteger,
  readName,
  readQueueType,
  isPlainObject,
  refuseIllFormedText,
  TIME_LIMIT_RANGE,
  showValue,
} from './config.readers.js';
import { DELAY_LADDER } from '../delivery/delay.plan.js';
import { readIdempotency } from '../idempotency/idempotency.config.js';
import type { ReconnectPolicy } from '../connection/reconnect.policy.js';
import type { ParkLogs, RetryLogs, QueueType, RetryModuleOptions } from './retry.options.js';
import { readInbox, readOutbox } from '../outbox/outbox.config.js';
import { readCircuitBreaker, readRateLimit } from '../breaker/breaker.config.js';
import { readHeartbeat } from '../observe/heartbeat/heartbeat.config.js';
import { keysOf, refuseUnknownKeys } from './option-keys.js';

/** The module's configuration after defaults, environment and validation: what resolveModuleConfig returns. */
export type ModuleConfig = ReturnType<typeof resolveModuleConfig>;

export const DEFAULT_DELAYS = ['1s', '10s', '1m'] as const;
export const MAX_ATTEMPTS_LIMIT = 1_000_000;
export const DEFAULT_RECONNECT = { initialDelayMs: 100, maxDelayMs: 30_000 } as const;
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** The shortest publishTimeout: a publish first opens a channel, a round trip to the broker, within it. */
export const MIN_PUBLISH_TIMEOUT_MS = 100;
const PUBLISH_TIMEOUT_RANGE: DurationRange = {
  ...TIME_LIMIT_RANGE,
  min: MIN_PUBLISH_TIMEOUT_MS,
  below: `a publish opens a channel within it (a round trip to the broker), so a limit under ${MIN_PUBLISH_TIMEOUT_MS} ms fails publishes, and the start, before the broker can answer`,
  belowFix: `Use at least ${MIN_PUBLISH_TIMEOUT_MS}ms`,
};

export type Environment = Readonly<Record<string, string | undefined>>;

const moduleKey = (key: string) => `RetryModule option "${key}"`;

/** Text a user gave, quoted and cut to 60 characters, for error messages. */
const clipped = (text: string): string => JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);

const RECONNECT_KEYS = keysOf<NonNullable<RetryModuleOptions['reconnect']>>({ initialDelay: 1, maxDelay: 1 });

function readReconnect(reconnect: unknown = {}): ReconnectPolicy {
  if (!isPlainObject(reconnect)) {
    throw new RetryConfigError(
      'RetryModule option "reconnect"',
      `is ${showValue(reconnect)}`,
      "Give { initialDelay, maxDelay }, e.g. { initialDelay: '100ms', maxDelay: '30s' }, or leave it out for the defaults.",
    );
  }
  refuseUnknownKeys(reconnect, RECONNECT_KEYS, 'reconnect', moduleKey);
  const key = (k: string) => moduleKey(`reconnect.${k}`);
  const initialDelayMs = readDuration(reconnect.initialDelay, key('initialDelay'), "'100ms'", TIME_LIMIT_RANGE, DEFAULT_RECONNECT.initialDelayMs);
  const longest = Math.max(initialDelayMs, DEFAULT_RECONNECT.maxDelayMs);
  const maxDelayMs = readDuration(reconnect.maxDelay, key('maxDelay'), "'30s'", TIME_LIMIT_RANGE, longest);
  if (maxDelayMs < initialDelayMs || initialDelayMs === 0) {
    throw new RetryConfigError(
      'RetryModule option "reconnect"',
      `has initialDelay ${initialDelayMs} ms and maxDelay ${maxDelayMs} ms`,
      'Use an initialDelay above 0 and a maxDelay at least as long.',
    );
  }
  return { initialDelayMs, maxDelayMs };
}

const DELAYED_DELIVERY_KEYS = keysOf<Exclude<RetryModuleOptions['delayedDelivery'], boolean | undefined>>({ prefix: 1, queueType: 1 });

/**
 * Option `delayedDelivery`: the delay ladder's configured prefix (`delayPrefix`, undefined when delayed delivery is off)
 * and the type of its queues (`delayQueueType`: its `queueType`, else the module's).
 */
function readDelayedDelivery(option: RetryModuleOptions['delayedDelivery'], moduleType: QueueType) {
  if (option === undefined || typeof option === 'boolean')
    return { delayPrefix: option === false ? undefined : DELAY_LADDER.prefix, delayQueueType: moduleType };
  if (!isPlainObject(option)) {
    throw new RetryConfigError(
      'RetryModule option "delayedDelivery"',
      `is ${showValue(option)}`,
      "Use true, false, or { prefix: 'billing.delay', queueType: 'quorum' }.",
    );
  }
  refuseUnknownKeys(option, DELAYED_DELIVERY_KEYS, 'delayedDelivery', moduleKey);
  // The ladder appends ".quorum.v1.p10.3221225472ms" and the like to the prefix.
  const prefix =
    option.prefix === undefined ? DELAY_LADDER.prefix : readName(option.prefix, 'RetryModule option "delayedDelivery.prefix"', 40, "'billing.delay'");
  if (prefix.endsWith('.quorum')) {
    // A classic ladder "X.quorum" would have the names of the quorum ladder "X".
    throw new RetryConfigError(
      'RetryModule option "delayedDelivery.prefix"',
      `is "${prefix}": ".quorum" ends the names of quorum ladders`,
      "Choose a prefix that does not end in '.quorum', e.g. 'billing.delay'.",
    );
  }
  const delayQueueType =
    option.queueType === undefined ? moduleType : readQueueType(option.queueType, 'RetryModule option "delayedDelivery.queueType"');
  return { delayPrefix: prefix as string | undefined, delayQueueType };
}

const LOGGING_KEYS = keysOf<NonNullable<RetryModuleOptions['logging']>>({ retries: 1, parked: 1 });

/** Option `logging`: an object of `retries` and `parked`, each one of its words; a misspelt key is refused, not ignored. */
function readLogging(logging: unknown): { retryLogs: RetryLogs; parkLogs: ParkLogs } {
  if (logging === undefined) return { retryLogs: 'line', parkLogs: 'line' };
  if (typeof logging !== 'object' || logging === null || Array.isArray(logging)) {
    throw new RetryConfigError(
      'RetryModule option "logging"',
      `is ${logging === null ? 'null' : Array.isArray(logging) ? 'an array' : typeof logging}`,
      "Give an object, e.g. { retries: 'line', parked: 'line' }.",
    );
  }
  refuseUnknownKeys(logging, LOGGING_KEYS, 'logging', moduleKey);
  const { retries, parked } = logging as Record<string, unknown>;
  const word = (value: unknown) => (typeof value === 'string' ? clipped(value) : `a ${typeof value}`);
  if (retries !== undefined && retries !== 'line' && retries !== 'nest') {
    throw new RetryConfigError('RetryModule option "logging.retries"', `is ${word(retries)}`, "Use 'line' (one line per decision) or 'nest'.");
  }
  if (parked !== undefined && parked !== 'line' && parked !== 'stack') {
    throw new RetryConfigError(
      'RetryModule option "logging.parked"',
      `is ${word(parked)}`,
      "Use 'line' (one warning line per park, the default) or 'stack' (the line followed by the handler's stack).",
    );
  }
  return { retryLogs: retries ?? 'line', parkLogs: parked ?? 'line' };
}

/** Longest application name: it is stored in every registry record of the application's queues. */
export const MAX_APPLICATION_NAME = 200;

/** The application name: printable text (no control characters), trimmed, at most MAX_APPLICATION_NAME characters. */
function readApplication(value: unknown, key: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what it looks for
  if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_APPLICATION_NAME || /[\u0000-\u001f\u007f-\u009f]/.test(value)) {
    throw new RetryConfigError(
      key,
      `is ${typeof value === 'string' ? clipped(value) : typeof value}`,
      `Give the application's name as printable text of 1 to ${MAX_APPLICATION_NAME} characters, e.g. 'orders-service'.`,
    );
  }
  refuseIllFormedText(value, key, "'orders-service'");
  return value.trim();
}

/** The connection name shown in the management UI: text, not blank, well-formed (it is sent as UTF-8). */
function readConnectionName(value: unknown): string {
  const key = 'RetryModule option "connectionName"';
  const example = "'orders-service'";
  if (typeof value !== 'string' || value.trim() === '') {
    throw new RetryConfigError(
      key,
      `is ${showValue(value)}`,
      `Give the name the broker shows for the connections as text, e.g. ${example}, or leave it out.`,
    );
  }
  refuseIllFormedText(value, key, example);
  return value;
}

/** The broker users allowed to send control commands besides the application's own: names of 1 to 255 characters. */
function readControlUsers(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const valid = (user: unknown) => typeof user === 'string' && user !== '' && Buffer.byteLength(user) <= 255;
  if (!Array.isArray(value) || !value.every(valid)) {
    throw new RetryConfigError(
      moduleKey('controlUsers'),
      `is ${showValue(value)}`,
      "Give the broker users who may pause and resume besides the application's own, e.g. ['ops'], or leave it out for any.",
    );
  }
  return [...(value as string[])];
}

/**
 * The options RetryModule was given, refused unless an options object: what forRootAsync's factory (or its class's
 * create method) returned may be anything, and undefined, null or an array would fail later with a bare TypeError.
 * @example readModuleOptions({ url: 'amqp://rabbit' }) // the same object
 */
export function readModuleOptions(options: unknown): RetryModuleOptions {
  return readOptionsObject<RetryModuleOptions>(
    options,
    "RetryModule options (what forRootAsync's factory returned)",
    "Return the options object from useFactory (or from the create method of useClass), e.g. useFactory: (config: ConfigService) => ({ url: config.get('AMQP_URL') }); {} takes every default.",
  );
}

/**
 * Options refused unless an options object (named `key` in the error, with `fix`): from JavaScript, or through a cast,
 * undefined, null, a string or an array would fail later with a bare TypeError or name the wrong option.
 */
export function readOptionsObject<T extends object>(options: unknown, key: string, fix: string): T {
  if (typeof options === 'object' && options !== null && !Array.isArray(options)) return options as T;
  throw new RetryConfigError(key, `are ${showValue(options)}, not an options object`, fix);
}

/** Resolves the module configuration: each option from `options`, else `env`, else the default; never mutates `options`. */
export function resolveModuleConfig(options: RetryModuleOptions = {}, env: Environment = {}) {
  /** The option, else its environment variable, read by `read` and named in its errors as the user wrote it; else `fallback`. */
  const given = <T>(key: keyof RetryModuleOptions, envName: string, read: (value: unknown, key: string) => T, fallback: T): T => {
    if (options[key] !== undefined) return read(options[key], moduleKey(key));
    const raw = env[envName];
    return raw !== undefined && raw.trim() !== '' ? read(raw, `environment variable ${envName}`) : fallback;
  };
  const duration = (key: keyof RetryModuleOptions, envName: string, example: string, range: DurationRange, fallback: number) =>
    given(key, envName, (value, name) => readDuration(value, name, example, range), fallback);
  if (options.timeout !== undefined && options.handlerTimeout !== undefined && options.timeout !== options.handlerTimeout) {
    throw new RetryConfigError(
      'RetryModule option "timeout"',
      `is ${showValue(options.timeout)} and "handlerTimeout" is ${showValue(options.handlerTimeout)}`,
      'They are the same option: give one of them.',
    );
  }

  const urls = readBrokerUrls(options, env.AMQP_URL, 'RetryModule');
  const moduleQueueType = given('queueType', 'RETRY_QUEUE_TYPE', readQueueType, 'classic');
  const readDelayList = (value: unknown, key: string) =>
    readDelays(typeof value === 'string' ? value.split(',').map((d) => d.trim()) : value, key, "'1s,10s,1m'");
  return {
    /** The first of `urls`, for messages that name one broker. */
    url: urls[0],
    /** The brokers (nodes of one cluster) to connect to, tried in order at start-up; see `urls` in RetryModuleOptions. */
    urls,
    delaysMs: given('delays', 'RETRY_DELAYS', readDelayList, undefined) ?? readDelayList([...DEFAULT_DELAYS], 'delays'),
    /** Only when set explicitly: otherwise each handler derives it from its own tiers. */
    maxAttempts: given('maxAttempts', 'RETRY_MAX_ATTEMPTS', (value, key) => readInteger(value, key, 1, MAX_ATTEMPTS_LIMIT, '5'), undefined),
    prefetch: given('prefetch', 'RETRY_PREFETCH', (value, key) => readInteger(value, key, 1, 65_535, '20'), 20),
    queueType: moduleQueueType,
    connectionName: options.connectionName === undefined ? undefined : readConnectionName(options.connectionName),
    /** The name recorded with the handler queues (RetryModuleOptions.application), if given. */
    application: given('application', 'RETRY_APPLICATION', readApplication, undefined),
    ...readDelayedDelivery(options.delayedDelivery, moduleQueueType),
    reconnect: readReconnect(options.reconnect),
    publishTimeoutMs: duration('publishTimeout', 'RETRY_PUBLISH_TIMEOUT', "'10s'", PUBLISH_TIMEOUT_RANGE, 10_000),
    publishBufferSize: readInteger(options.publishBufferSize, moduleKey('publishBufferSize'), 0, 1_000_000, '1000', 1_000),
    confirmTimeoutMs: duration('confirmTimeout', 'RETRY_CONFIRM_TIMEOUT', "'10s'", POSITIVE_TIME_LIMIT_RANGE, 10_000),
    connectTimeoutMs: duration('connectTimeout', 'RETRY_CONNECT_TIMEOUT', "'10s'", POSITIVE_TIME_LIMIT_RANGE, DEFAULT_CONNECT_TIMEOUT_MS),
    shutdownTimeoutMs: duration('shutdownTimeout', 'RETRY_SHUTDOWN_TIMEOUT', "'30s'", TIME_LIMIT_RANGE, 30_000),
    /** The longest handler call of handlers without their own `timeout`, in ms; 0: no limit. */
    handlerTimeoutMs:
      options.handlerTimeout === undefined && options.timeout !== undefined
        ? readDuration(options.timeout, moduleKey('timeout'), "'30s'", TIME_LIMIT_RANGE)
        : duration('handlerTimeout', 'RETRY_HANDLER_TIMEOUT', "'30s'", TIME_LIMIT_RANGE, 0),
    deserializer: options.deserializer === undefined ? 'json' : readDeserializer(options.deserializer, moduleKey('deserializer')),
    ...readLogging(options.logging),
    /** The default of handlers without their own `idempotency`. */
    idempotency: options.idempotency === undefined ? undefined : readIdempotency(options.idempotency, moduleKey),
    outbox: options.outbox === undefined ? undefined : readOutbox(options.outbox, moduleKey),
    /** The default inbox of handlers without their own. */
    inbox: options.inbox === undefined ? undefined : readInbox(options.inbox, moduleKey),
    /** The defaults of handlers without their own `circuitBreaker` and `rateLimit`. */
    circuitBreaker: readCircuitBreaker(options.circuitBreaker, moduleKey),
    rateLimit: readRateLimit(options.rateLimit, moduleKey),
    /** This instance's heartbeat to the retry console, when turned on (RetryModuleOptions.heartbeat). */
    heartbeat: readHeartbeat(options.heartbeat, moduleKey),
    /** The broker users besides its own whose control commands it takes (RetryModuleOptions.controlUsers); undefined: any. */
    controlUsers: readControlUsers(options.controlUsers),
  };
}
