import { RetryConfigError } from '../../errors/retry-config.error.js';
import type { RetryHandlerOptions, RetryModuleOptions } from './retry.options.js';

/** Every key of RetryHandlerOptions: `satisfies` fails the build when one is added to the type and not here. */
const HANDLER_KEYS = {
  queue: 1,
  exchange: 1,
  exchangeType: 1,
  routingKey: 1,
  delays: 1,
  backoff: 1,
  maxAttempts: 1,
  timeout: 1,
  errorQueue: 1,
  nonRetryable: 1,
  prefetch: 1,
  queueType: 1,
  deserializer: 1,
  idempotency: 1,
  inbox: 1,
  ordering: 1,
  singleActiveConsumer: 1,
  circuitBreaker: 1,
  rateLimit: 1,
  partitions: 1,
  maxLength: 1,
  maxLengthBytes: 1,
  overflow: 1,
  messageTtl: 1,
  maxPriority: 1,
  onExpired: 1,
} satisfies Record<keyof RetryHandlerOptions, 1>;

/** Every key of RetryModuleOptions, kept whole the same way. */
const MODULE_KEYS = {
  url: 1,
  urls: 1,
  delays: 1,
  maxAttempts: 1,
  prefetch: 1,
  queueType: 1,
  connectionName: 1,
  application: 1,
  reconnect: 1,
  publishTimeout: 1,
  publishBufferSize: 1,
  delayedDelivery: 1,
  shutdownTimeout: 1,
  handlerTimeout: 1,
  timeout: 1,
  confirmTimeout: 1,
  connectTimeout: 1,
  deserializer: 1,
  observers: 1,
  metrics: 1,
  tracing: 1,
  logging: 1,
  idempotency: 1,
  outbox: 1,
  inbox: 1,
  circuitBreaker: 1,
  rateLimit: 1,
  heartbeat: 1,
  controlUsers: 1,
} satisfies Record<keyof RetryModuleOptions, 1>;

/** The number of single-character edits from `a` to `b` (Levenshtein), for "did you mean". */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}

/** The known key a misspelt one most likely meant: the same but for case, else at most 2 edits away (3 for long keys). */
function nearestKey(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const sameButCase = known.find((k) => k.toLowerCase() === lower);
  if (sameButCase !== undefined) return sameButCase;
  const limit = key.length > 8 ? 3 : 2;
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { key: candidate, distance };
  }
  return best?.key;
}

/** One line per key of `options` that `known` (and `extras`) lack, naming it (`name`) and the key it most likely meant. */
function unknownKeyLines(options: object, known: Record<string, 1>, name: (key: string) => string, extras: readonly string[] = []): string[] {
  const keys = [...Object.keys(known), ...extras];
  return Object.keys(options)
    .filter((key) => !keys.includes(key))
    .map((key) => {
      const near = nearestKey(key, keys);
      return `${name(key)} is not an option and is ignored${near === undefined ? '' : `: did you mean "${near}"?`}`;
    });
}

/**
 * Lines for the keys of a `@RetryWithBackoff` declaration that are no option (a misspelling is ignored, and its
 * default applies): logged at start as warnings, since a shared object of settings may carry keys of its own.
 * @example unknownHandlerOptions({ queue: 'orders', maxAttempt: 3 }, 'Orders.handle')
 * // ['@RetryWithBackoff option "maxAttempt" of Orders.handle is not an option and is ignored: did you mean "maxAttempts"?']
 */
export const unknownHandlerOptions = (options: object, where: string): string[] =>
  unknownKeyLines(options, HANDLER_KEYS, (key) => `@RetryWithBackoff option "${key}" of ${where}`);

/** The same for RetryModule's options; `extras` are keys the caller takes besides them (`forRoot`'s `isGlobal`). */
export const unknownModuleOptions = (options: object, extras: readonly string[] = []): string[] =>
  unknownKeyLines(options, MODULE_KEYS, (key) => `RetryModule option "${key}"`, extras);

/**
 * The keys of an options type `T`, every one of them: `keysOf<T>({ a: 1, b: 1 })` fails the build when T gains a key
 * the record lacks, or the record has one T lacks.
 */
export const keysOf = <T>(record: Record<keyof T, 1>): readonly string[] => Object.keys(record);

/**
 * Refuses the first key of the option object `value` at `path` (`'reconnect'`, `'outbox.retryDelay'`) that is not among
 * `known`, naming it as `at` spells it, the known key it most likely meant and all of them: inside an option a
 * misspelt key would leave its default in force unseen. `what` names the object in the message (default: `path`).
 * @example refuseUnknownKeys({ maxDelai: '5s' }, ['initialDelay', 'maxDelay'], 'reconnect', (k) => `RetryModule option "${k}"`)
 * // throws: RetryModule option "reconnect.maxDelai" is not an option of reconnect. Did you mean "maxDelay"? ...
 */
export function refuseUnknownKeys(value: object, known: readonly string[], path: string, at: (key: string) => string, what = path): void {
  const unknown = Object.keys(value).find((key) => !known.includes(key));
  if (unknown === undefined) return;
  const near = nearestKey(unknown, known);
  throw new RetryConfigError(
    at(`${path}.${unknown.length > 60 ? `${unknown.slice(0, 60)}…` : unknown}`),
    `is not an option of ${what}`,
    `${near === undefined ? '' : `Did you mean "${near}"? `}Use only ${known.join(', ')}.`,
  );
}
