/**
 * Thrown at start-up when module, environment or decorator configuration is invalid.
 * `key` names what is wrong exactly as the user wrote it: an option path or an environment variable.
 */
export class RetryConfigError extends Error {
  constructor(
    /** The option path or environment variable at fault, as the user wrote it. */
    readonly key: string,
    problem: string,
    fix: string,
  ) {
    super(`Invalid retry configuration: ${key} ${problem}. ${fix}`);
    this.name = 'RetryConfigError';
  }
}

/** Refuses the duration `ms` of option `key` when it is shorter than `least`, that of option `leastName`. */
export function refuseShorter(key: string, ms: number, leastName: string, least: number, fix: string): void {
  if (ms < least) throw new RetryConfigError(key, `(${ms} ms) is shorter than ${leastName} (${least} ms)`, fix);
}

/** Refuses option `key` when it is given and is no function. */
export function requireFunction(value: unknown, key: string, fix: string): void {
  if (value !== undefined && typeof value !== 'function') throw new RetryConfigError(key, 'is not a function', fix);
}

/** Refuses option `key` unless it has each of `methods`: it "is missing", or "lacks" those it lacks. */
export function requireMethods(value: unknown, methods: readonly string[], key: string, fix: string): void {
  const missing = methods.filter((method) => typeof (value as Record<string, unknown> | undefined)?.[method] !== 'function');
  if (missing.length > 0) throw new RetryConfigError(key, value === undefined ? 'is missing' : `lacks ${missing.join(', ')}`, fix);
}
