import { RetryConfigError } from '../errors/retry-config.error.js';
import type { Deserializer } from './body.decoder.js';
import { readDelay, readDelays, readDeserializer, readInteger, readName, readQueueType } from './config.readers.js';
import { DELAY_LADDER } from './delay.plan.js';
import { readIdempotency, type IdempotencyConfig } from './idempotency.config.js';
import type { ReconnectPolicy } from './reconnect.policy.js';
import type { QueueType, RetryModuleOptions } from './retry-options.js';

/** The module's configuration after defaults, environment and validation. */
export interface ModuleConfig {
  url: string;
  delaysMs: number[];
  /** Only when set explicitly: otherwise each handler derives it from its own tiers. */
  maxAttempts?: number;
  prefetch: number;
  queueType: QueueType;
  connectionName?: string;
  /** The delay ladder's prefix, or undefined when delayed delivery is off. */
  delayPrefix?: string;
  reconnect: ReconnectPolicy;
  publishTimeoutMs: number;
  publishBufferSize: number;
  confirmTimeoutMs: number;
  connectTimeoutMs: number;
  shutdownTimeoutMs: number;
  deserializer: Deserializer;
  /** The default of handlers without their own `idempotency`. */
  idempotency?: IdempotencyConfig;
}

export const DEFAULT_URL = 'amqp://guest:guest@localhost:5672';
export const DEFAULT_DELAYS = ['1s', '10s', '1m'] as const;
export const DEFAULT_PREFETCH = 20;
export const MAX_ATTEMPTS_LIMIT = 1_000_000;
export const DEFAULT_RECONNECT = { initialDelayMs: 100, maxDelayMs: 30_000 } as const;
export const DEFAULT_PUBLISH_TIMEOUT_MS = 10_000;
export const DEFAULT_PUBLISH_BUFFER_SIZE = 1_000;
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000;
export const DEFAULT_CONFIRM_TIMEOUT_MS = 10_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

export type Environment = Readonly<Record<string, string | undefined>>;

/** Where a value came from, named the way the user wrote it, for error messages. */
function pick<K extends keyof RetryModuleOptions>(options: RetryModuleOptions, env: Environment, key: K, envName: string) {
  if (options[key] !== undefined) return { value: options[key] as unknown, key: `RetryModule option "${key}"` };
  const raw = env[envName];
  if (raw !== undefined && raw.trim() !== '') return { value: raw as unknown, key: `environment variable ${envName}` };
  return undefined;
}

function isAmqpUrl(url: string): boolean {
  try {
    const parsed = new URL(url);
    return (parsed.protocol === 'amqp:' || parsed.protocol === 'amqps:') && parsed.hostname !== '';
  } catch {
    return false;
  }
}

function readReconnect(reconnect: NonNullable<RetryModuleOptions['reconnect']>): ReconnectPolicy {
  const initialDelayMs =
    reconnect.initialDelay === undefined
      ? DEFAULT_RECONNECT.initialDelayMs
      : readDelay(reconnect.initialDelay, 'RetryModule option "reconnect.initialDelay"', "'100ms'");
  const maxDelayMs =
    reconnect.maxDelay === undefined
      ? Math.max(initialDelayMs, DEFAULT_RECONNECT.maxDelayMs)
      : readDelay(reconnect.maxDelay, 'RetryModule option "reconnect.maxDelay"', "'30s'");
  if (maxDelayMs < initialDelayMs || initialDelayMs === 0) {
    throw new RetryConfigError(
      'RetryModule option "reconnect"',
      `has initialDelay ${initialDelayMs} ms and maxDelay ${maxDelayMs} ms`,
      'Use an initialDelay above 0 and a maxDelay at least as long.',
    );
  }
  return { initialDelayMs, maxDelayMs };
}

function readDelayPrefix(option: RetryModuleOptions['delayedDelivery']): string | undefined {
  if (option === undefined || option === true) return DELAY_LADDER.prefix;
  if (option === false) return undefined;
  // The ladder appends ".v1.p10.3221225472ms" and the like to the prefix.
  return readName(option?.prefix, 'RetryModule option "delayedDelivery.prefix"', 32, "'billing.delay'");
}

/** A duration above 0: a time limit of 0 would fail everything at once. */
function readPositiveDelay(value: unknown, key: string, example: string): number {
  const ms = readDelay(value, key, example);
  if (ms === 0) throw new RetryConfigError(key, 'is 0', `Use a time limit above 0, e.g. ${example}.`);
  return ms;
}

/** Masks the password of an AMQP URL, for logs and errors. */
export function maskUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*:)[^@/]*@/i, '$1***@');
}

/**
 * Resolves the module configuration: each option from `options` if given, else from `env`, else the default;
 * throws RetryConfigError naming the option or variable at fault. Never mutates `options`.
 */
export function resolveModuleConfig(options: RetryModuleOptions = {}, env: Environment = {}): ModuleConfig {
  const url = pick(options, env, 'url', 'AMQP_URL');
  const delays = pick(options, env, 'delays', 'RETRY_DELAYS');
  const maxAttempts = pick(options, env, 'maxAttempts', 'RETRY_MAX_ATTEMPTS');
  const prefetch = pick(options, env, 'prefetch', 'RETRY_PREFETCH');
  const queueType = pick(options, env, 'queueType', 'RETRY_QUEUE_TYPE');
  const publishTimeout = pick(options, env, 'publishTimeout', 'RETRY_PUBLISH_TIMEOUT');
  const shutdownTimeout = pick(options, env, 'shutdownTimeout', 'RETRY_SHUTDOWN_TIMEOUT');
  const confirmTimeout = pick(options, env, 'confirmTimeout', 'RETRY_CONFIRM_TIMEOUT');
  const connectTimeout = pick(options, env, 'connectTimeout', 'RETRY_CONNECT_TIMEOUT');

  const urlValue = url ? url.value : DEFAULT_URL;
  if (typeof urlValue !== 'string' || !isAmqpUrl(urlValue)) {
    const shown = typeof urlValue === 'string' ? `"${maskUrl(urlValue)}"` : String(urlValue);
    throw new RetryConfigError(url?.key ?? 'url', `is ${shown}`, 'Use an AMQP URL such as amqp://user:password@host:5672/vhost.');
  }
  const delayList = delays && typeof delays.value === 'string' ? delays.value.split(',').map((d) => d.trim()) : delays?.value;
  return {
    url: urlValue,
    delaysMs: delays ? readDelays(delayList, delays.key, "'1s,10s,1m'") : readDelays([...DEFAULT_DELAYS], 'delays', "'1s,10s,1m'"),
    maxAttempts: maxAttempts ? readInteger(maxAttempts.value, maxAttempts.key, 1, MAX_ATTEMPTS_LIMIT, '5') : undefined,
    prefetch: prefetch ? readInteger(prefetch.value, prefetch.key, 1, 65_535, '20') : DEFAULT_PREFETCH,
    queueType: queueType ? readQueueType(queueType.value, queueType.key) : 'classic',
    connectionName: options.connectionName,
    delayPrefix: readDelayPrefix(options.delayedDelivery),
    reconnect: readReconnect(options.reconnect ?? {}),
    publishTimeoutMs: publishTimeout ? readDelay(publishTimeout.value, publishTimeout.key, "'10s'") : DEFAULT_PUBLISH_TIMEOUT_MS,
    publishBufferSize:
      options.publishBufferSize === undefined
        ? DEFAULT_PUBLISH_BUFFER_SIZE
        : readInteger(options.publishBufferSize, 'RetryModule option "publishBufferSize"', 0, 1_000_000, '1000'),
    confirmTimeoutMs: confirmTimeout ? readPositiveDelay(confirmTimeout.value, confirmTimeout.key, "'10s'") : DEFAULT_CONFIRM_TIMEOUT_MS,
    connectTimeoutMs: connectTimeout ? readPositiveDelay(connectTimeout.value, connectTimeout.key, "'10s'") : DEFAULT_CONNECT_TIMEOUT_MS,
    shutdownTimeoutMs: shutdownTimeout ? readDelay(shutdownTimeout.value, shutdownTimeout.key, "'30s'") : DEFAULT_SHUTDOWN_TIMEOUT_MS,
    deserializer: options.deserializer === undefined ? 'json' : readDeserializer(options.deserializer, 'RetryModule option "deserializer"'),
    idempotency: options.idempotency === undefined ? undefined : readIdempotency(options.idempotency, (key) => `RetryModule option "${key}"`),
  };
}
