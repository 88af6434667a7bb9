/**
 * A new object with the own enumerable string keys of `sources`, later sources winning: what `{ ...a, ...b }` makes,
 * a key named `__proto__` included as an own key (never as the copy's prototype, which `Object.assign` would make it),
 * without the spread. On Node 20 a spread followed by keys of its own takes V8's slow path (docs/performance.md,
 * "Spreads on the per-message paths"); this loop does not, and the copy can take more keys at no extra cost.
 * @example copyOwn(message.properties.headers, { 'x-first-queue': 'orders' })
 */
export function copyOwn(...sources: ReadonlyArray<object | null | undefined>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const source of sources) {
    if (source === null || source === undefined) continue;
    for (const key of Object.keys(source)) {
      const value = (source as Record<string, unknown>)[key];
      if (key === '__proto__') Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
      else copy[key] = value;
    }
  }
  return copy;
}
