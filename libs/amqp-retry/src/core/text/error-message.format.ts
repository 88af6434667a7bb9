/**
 * Text for anything thrown. These run on failure paths (parking, logging a failed handler), where a throw of their
 * own would turn one failed message into a stuck one, so every step that can run user code (getters, `toString`,
 * `toJSON`, Proxy traps) is guarded and the last resort is a fixed description.
 */

/** What is said of a value that has no readable text at all (no `toString`, throwing getters, a hostile Proxy). */
export const UNPRINTABLE = '[object without a string form]';

/** Longest JSON form of a thrown non-Error used as its message: enough to identify it, not a dump of a large object. */
const MAX_JSON_CHARS = 1_000;

/** How deep a non-string `message` is itself described (an Error whose message is an Error whose message is...). */
const MAX_DEPTH = 3;

/** Runs `read`, turning a throw into undefined. */
function attempt<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/** A property of a thrown object; undefined when reading it throws (getter, Proxy trap). */
const property = (value: object, key: PropertyKey): unknown => attempt(() => (value as Record<PropertyKey, unknown>)[key]);

function describe(error: unknown, depth: number): string {
  if (typeof error === 'string') return error;
  // String() is safe for every primitive, symbols included (unlike a template literal, which throws on a symbol).
  if (error === null || (typeof error !== 'object' && typeof error !== 'function')) return String(error);
  if (typeof error === 'function') {
    const name = property(error, 'name');
    return typeof name === 'string' && name !== '' ? `[function ${name}]` : '[function]';
  }

  // An Error, or anything shaped like one (an Error from another realm fails instanceof): its message.
  const message = property(error, 'message');
  if (typeof message === 'string') {
    if (message !== '') return message;
    const name = property(error, 'name');
    return typeof name === 'string' && name !== '' ? name : 'Error';
  }
  if (message !== undefined && depth < MAX_DEPTH) return describe(message, depth + 1);

  // Anything else: its own text, unless that says nothing ("[object Object]"), in which case its JSON form.
  const text = attempt(() => String(error));
  if (text !== undefined && !text.startsWith('[object ')) return text;
  const json = attempt(() => JSON.stringify(error));
  if (typeof json === 'string' && json !== '{}') return json.length > MAX_JSON_CHARS ? `${json.slice(0, MAX_JSON_CHARS)}...` : json;
  return text ?? UNPRINTABLE;
}

/** The message of anything thrown: an Error's message (its name if empty), any other value as text. Never throws. */
export function errorMessage(error: unknown): string {
  return attempt(() => describe(error, 0)) ?? UNPRINTABLE;
}

/** The stack of anything thrown if it has one (a non-empty string), else its errorMessage. Never throws. */
export function errorStack(error: unknown): string {
  const stack = typeof error === 'object' && error !== null ? property(error, 'stack') : undefined;
  return typeof stack === 'string' && stack !== '' ? stack : errorMessage(error);
}
