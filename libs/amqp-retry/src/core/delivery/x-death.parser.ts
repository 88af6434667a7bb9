/** One entry of the broker's `x-death` header, as far as it could be read. */
export interface XDeath {
  /** The queue the message was dead-lettered from. */
  queue: string;
  /** Why: `rejected`, `expired`, `maxlen` or `delivery_limit`. */
  reason: string;
  /** How many times the message was dead-lettered from that queue for that reason. */
  count: number;
  /** The exchange the message had been published to before that queue. */
  exchange?: string;
  /** The routing keys it had been published with (the `CC` header's included). */
  routingKeys: string[];
  /** When it was first dead-lettered from that queue for that reason. */
  time?: Date;
  /** The `expiration` the broker removed at this entry's first dead-lettering (`original-expiration`), if it had one. */
  originalExpiration?: string;
}

/** More entries than this make a header malformed: the broker writes one per queue and reason, far fewer in practice. */
export const MAX_DEATH_ENTRIES = 1000;

/** The outcome of readDeathHistory: the entries, or why the header is not one the broker wrote. */
export type DeathHistory = { ok: true; deaths: XDeath[] } | { ok: false; problem: string };

/** amqplib's integer tags for `{ '!': tag, value }` (its encoder's names, and 'signedint' of older versions). */
const INTEGER_TAGS: ReadonlySet<unknown> = new Set([
  'byte', 'int8', 'unsignedbyte', 'uint8', 'short', 'int16', 'unsignedshort', 'uint16',
  'int', 'int32', 'unsignedint', 'uint32', 'long', 'int64', 'signedint',
]); // prettier-ignore

/** The latest time a Date can hold, in seconds. */
const MAX_DATE_SECONDS = 8.64e12;

/** A field table as amqplib decodes it: a plain object, not an array, Buffer, Date or class instance. */
function isTable(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || ArrayBuffer.isView(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** amqplib's wrapper of a typed value, `{ '!': tag, value }`. */
function wrapperTag(value: unknown): unknown {
  return isTable(value) && Object.hasOwn(value, '!') ? value['!'] : undefined;
}

/** What kind of value this is, for a problem sentence: "a string", "an array", "null". */
function kind(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'missing';
  if (Array.isArray(value)) return 'an array';
  if (ArrayBuffer.isView(value)) return 'a byte array';
  if (value instanceof Date) return 'a Date';
  const tag = wrapperTag(value);
  if (typeof tag === 'string') return `a ${tag.slice(0, 20)}`;
  if (isTable(value)) return 'a table';
  const type = typeof value;
  return type === 'object' ? 'an object that is not a table' : `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
}

/** A field's value for a problem sentence: numbers and short strings as they are, anything else by kind. */
function shown(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint') return `a bigint (${value})`;
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  return kind(value);
}

/** The value of an integer field, out of amqplib's integer wrapper if it has one. */
const unwrapped = (value: unknown): unknown => (INTEGER_TAGS.has(wrapperTag(value)) ? (value as { value: unknown }).value : value);

/** An integer from a JS number (amqplib decodes every AMQP integer as one) or amqplib's integer wrapper. */
export function readStrictInteger(value: unknown): number | undefined {
  const raw = unwrapped(value);
  return typeof raw === 'number' && Number.isSafeInteger(raw) ? raw : undefined;
}

/** One entry, checked field by field; a string is the problem with it. */
function readStrictEntry(entry: unknown, at: string): XDeath | string {
  // A typed value ({ '!': 'timestamp', value }) is how amqplib decodes a timestamp or decimal: not a table on the wire.
  if (!isTable(entry) || wrapperTag(entry) !== undefined) return `${at} is ${kind(entry)}, not a table`;
  for (const field of ['queue', 'reason'] as const) {
    const value = entry[field];
    if (value === undefined) return `${at} has no ${field}`;
    if (typeof value !== 'string') return `${at}.${field} is ${shown(value)}, not a string`;
  }
  if (entry.count === undefined) return `${at} has no count`;
  const count = readStrictInteger(entry.count);
  if (count === undefined || count < 1) return `${at}.count is ${shown(unwrapped(entry.count))}, not a whole number from 1`;

  const { exchange } = entry;
  if (exchange !== undefined && typeof exchange !== 'string') return `${at}.exchange is ${shown(exchange)}, not a string`;
  const keys = entry['routing-keys'];
  if (keys !== undefined && !Array.isArray(keys)) return `${at}.routing-keys is ${shown(keys)}, not an array of strings`;
  const routingKeys = [...((keys ?? []) as unknown[])];
  const bad = routingKeys.findIndex((key) => typeof key !== 'string');
  if (bad >= 0) return `${at}.routing-keys[${bad}] is ${shown(routingKeys[bad])}, not a string`;
  let time: Date | undefined;
  if (entry.time !== undefined) {
    const seconds = wrapperTag(entry.time) === 'timestamp' ? (entry.time as { value: unknown }).value : undefined;
    if (typeof seconds !== 'number' || !Number.isSafeInteger(seconds) || seconds < 0 || seconds > MAX_DATE_SECONDS) {
      return `${at}.time is ${shown(entry.time)}, not a timestamp`;
    }
    time = new Date(seconds * 1000);
  }
  const death: XDeath = { queue: entry.queue as string, reason: entry.reason as string, count, exchange, routingKeys: routingKeys as string[], time };
  // Informative only: kept when it is text, ignored otherwise. Other fields are ignored: a newer broker may add more.
  const expiration = entry['original-expiration'];
  if (typeof expiration === 'string' || Buffer.isBuffer(expiration)) death.originalExpiration = expiration.toString();
  return death;
}

/**
 * Reads the `x-death` header strictly, as RabbitMQ writes it (see XDeath); absent, it is an empty history. Anything
 * else is refused with a sentence naming the first problem, e.g. `x-death[2] is a string, not a table`: the attempt
 * count comes from it, so a forged one must not be half-read, and such a message must never be dead-lettered again
 * (RabbitMQ 3.10 crashes the queue process on a non-table entry). Never throws.
 */
export function readDeathHistory(header: unknown): DeathHistory {
  try {
    if (header === undefined) return { ok: true, deaths: [] };
    if (!Array.isArray(header)) return { ok: false, problem: `x-death is ${kind(header)}, not an array of tables` };
    if (header.length > MAX_DEATH_ENTRIES) {
      return { ok: false, problem: `x-death has ${header.length} entries, more than the ${MAX_DEATH_ENTRIES} a broker could have written` };
    }
    const deaths: XDeath[] = [];
    for (let i = 0; i < header.length; i++) {
      const death = readStrictEntry(header[i], `x-death[${i}]`);
      if (typeof death === 'string') return { ok: false, problem: death };
      deaths.push(death);
    }
    return { ok: true, deaths };
  } catch {
    // Only a value built in-process (a Proxy, a throwing getter) gets here: amqplib decodes plain data.
    return { ok: false, problem: 'x-death could not be read: reading it threw' };
  }
}

/**
 * How often `queue` rejected the message: the count of its `{queue, reason: 'rejected'}` entry, found by
 * name, never by position (3.10 does not move the updated entry to the front). Should a hostile header hold
 * the entry twice, the larger count wins rather than the sum, so one failure is never counted twice.
 */
export function rejectedCount(deaths: readonly XDeath[], queue: string): number {
  return deaths.reduce((max, d) => (d.queue === queue && d.reason === 'rejected' ? Math.max(max, d.count) : max), 0);
}

/** The `{queue, rejected}` entry, whose exchange and routing keys are those of the first failure. */
export function firstRejection(deaths: readonly XDeath[], queue: string): XDeath | undefined {
  return deaths.find((d) => d.queue === queue && d.reason === 'rejected');
}
