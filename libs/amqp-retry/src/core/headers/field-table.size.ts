/**
 * Upper bounds of the bytes amqplib needs to encode a value into an AMQP field table (amqplib's lib/codec.js): headers
 * that do not fit its 64 KiB buffer or the frame_max cannot be sent at all (see PARKED_HEADERS_BUDGET).
 */

/** A shortstr table key holds at most 255 bytes; amqplib cannot encode a longer one. */
const MAX_KEY_BYTES = 255;

/** Tag byte plus the widest number encoding (double or long). */
const NUMBER_BYTES = 8;

/** The types amqplib encodes in at most 8 bytes when named in a `{ '!': type, value }` wrapper. */
const NUMERIC_TYPES: ReadonlySet<unknown> = new Set([
  'double', 'float64', 'float', 'byte', 'int8', 'unsignedbyte', 'uint8', 'short', 'int16', 'unsignedshort', 'uint16',
  'int', 'int32', 'unsignedint', 'uint32', 'long', 'int64', 'timestamp', 'decimal',
]); // prettier-ignore

/** Bytes of one field value after its type tag; Infinity for what amqplib cannot encode (it would throw). */
function valueSize(value: unknown, path: Set<object>): number {
  if (typeof value === 'string') return 4 + Buffer.byteLength(value);
  if (typeof value === 'number') return NUMBER_BYTES;
  if (typeof value === 'boolean') return 1;
  if (value === null) return 0;
  // undefined (skipped in a table by tableSize, refused by amqplib in an array), a bigint, a symbol or a function
  if (typeof value !== 'object') return Number.POSITIVE_INFINITY;
  // amqplib recurses without a guard, so a cycle overflows its stack: such a value cannot be published.
  if (path.has(value)) return Number.POSITIVE_INFINITY;
  if (Buffer.isBuffer(value)) return 4 + value.length;
  if (value instanceof Date) return NUMBER_BYTES; // generous: amqplib encodes a Date as an empty table (4 bytes)
  if (Object.hasOwn(value, '!')) {
    // amqplib's `{ '!': type, value }` wrapper, encoded as its value with the named type: at most 8 bytes for a number
    // of any width (and for a decimal's 5), a string, boolean or table as itself; amqplib throws on a type it does not know.
    const typed = value as { '!': unknown; value: unknown };
    const type = typed['!'];
    if (NUMERIC_TYPES.has(type)) return NUMBER_BYTES;
    if (type === 'string' || type === 'boolean' || type === 'object' || type === 'number')
      return Math.max(NUMBER_BYTES, valueSize(typed.value, path));
    return Number.POSITIVE_INFINITY;
  }
  path.add(value);
  try {
    if (Array.isArray(value)) return value.reduce<number>((sum, element) => sum + 1 + valueSize(element, path), 4);
    return tableSize(value as Record<string, unknown>, path);
  } finally {
    path.delete(value);
  }
}

function tableSize(table: Record<string, unknown>, path: Set<object>): number {
  let size = 4;
  // for...in as amqplib does: it encodes inherited enumerable keys too, and skips undefined values.
  for (const key in table) {
    const value = table[key];
    if (value === undefined) continue;
    const keyBytes = Buffer.byteLength(key);
    size += keyBytes > MAX_KEY_BYTES ? Number.POSITIVE_INFINITY : 1 + keyBytes + 1 + valueSize(value, path);
  }
  return size;
}

/**
 * An upper bound of the bytes amqplib encodes `headers` into; Infinity for a table it cannot encode at all (a key over
 * 255 bytes, a bigint, symbol or function, an undefined array element, a cycle, a throwing read). Never throws.
 */
export function encodedTableSize(headers: Record<string, unknown>): number {
  try {
    return tableSize(headers, new Set([headers]));
  } catch {
    return Number.POSITIVE_INFINITY; // a throwing getter or Proxy, or nesting deep enough to overflow the stack
  }
}

/** The bytes one header adds to a table: its key, type byte and value; Infinity if amqplib cannot encode it. */
export function encodedHeaderSize(key: string, value: unknown): number {
  if (value === undefined) return 0;
  return encodedTableSize({ [key]: value }) - 4;
}
