/**
 * What `{ ...a, ...b }` makes (a `__proto__` key included as an own key, unlike `Object.assign`), without the spread:
 * on Node 20 a spread followed by keys of its own takes V8's slow path (docs/performance.md); this loop does not.
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
