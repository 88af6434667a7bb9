/** One entry of the broker's `x-death` header, as far as it could be read. */
export interface XDeath {
  queue: string;
  reason: string;
  count: number;
  exchange?: string;
  routingKeys: string[];
  time?: Date;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A non-negative integer from a number, a numeric string, a bigint or amqplib's `{ value }` wrapper. */
function readCount(value: unknown): number | undefined {
  const raw = isRecord(value) && 'value' in value ? value.value : value;
  const n = typeof raw === 'bigint' ? Number(raw) : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** amqplib decodes AMQP timestamps (seconds) as `{ '!': 'timestamp', value }`; plain numbers are accepted too. */
function readTime(value: unknown): Date | undefined {
  const seconds = isRecord(value) ? value.value : value;
  return typeof seconds === 'number' && Number.isFinite(seconds) ? new Date(seconds * 1000) : undefined;
}

function readEntry(entry: unknown): XDeath | undefined {
  if (!isRecord(entry)) return undefined;
  const { queue, reason } = entry;
  const count = readCount(entry.count);
  if (typeof queue !== 'string' || typeof reason !== 'string' || count === undefined) return undefined;
  const routingKeys = Array.isArray(entry['routing-keys']) ? entry['routing-keys'].filter((key): key is string => typeof key === 'string') : [];
  return {
    queue,
    reason,
    count,
    exchange: typeof entry.exchange === 'string' ? entry.exchange : undefined,
    routingKeys,
    time: readTime(entry.time),
  };
}

/**
 * Reads the `x-death` header defensively: whatever a publisher or an old broker put there, this never
 * throws, and it keeps only entries with a queue, a reason and a valid count.
 */
export function parseXDeath(header: unknown): XDeath[] {
  if (!Array.isArray(header)) return [];
  return header.map(readEntry).filter((death): death is XDeath => death !== undefined);
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

/** A quorum queue's `x-delivery-count`: earlier deliveries of this message that were not settled; 0 if absent. */
export function unsettledDeliveries(headers: Record<string, unknown> | undefined): number {
  return readCount(headers?.['x-delivery-count']) ?? 0;
}
