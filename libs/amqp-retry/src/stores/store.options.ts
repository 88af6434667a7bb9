import { RetryConfigError } from '../errors/retry-config.error.js';

/** Refuses a store's options unless exactly one of `target` (where to connect) and `own` (the application's client) is given. */
export function requireOneOf<O extends object>(store: string, options: O, target: keyof O & string, own: keyof O & string, example: string): void {
  if ((options[target] === undefined) === (options[own] === undefined)) {
    throw new RetryConfigError(`${store} option "${target}"`, `and "${own}" are both given or both missing`, `Give one: ${example} or { ${own} }.`);
  }
}
