/** Why a message left a queue other than by an ack, as RabbitMQ names the reason in `x-death`. */
export type DeathReason = 'rejected' | 'expired' | 'maxlen' | 'delivery_limit';

/** One entry of a message's death history, as the broker keeps it (the `x-death` header is written from these). */
export interface Death {
  queue: string;
  reason: DeathReason;
  count: number;
  /** When it first died this way (ms since the epoch; written in seconds). */
  time: number;
  exchange: string;
  routingKeys: string[];
  originalExpiration?: string;
}

/** Which RabbitMQ's dead-lettering the broker follows: `current` (3.13 and later), `legacy` (3.12 and earlier, e.g. 3.10). */
export type DeathRules = 'current' | 'legacy';

/** The rules of a RabbitMQ version (`4.1.0`, `3.10.8`, `4.2.0-rc.1`): legacy before 3.13. Anything else is refused, naming the option. */
export function deathRulesOf(version: string): DeathRules {
  const read = /^(\d+)\.(\d+)(\.\d+)?([-+~].*)?$/.exec(version);
  if (!read)
    throw new TypeError(
      `RetryHarness option brokerVersion: ${JSON.stringify(version)} is not a RabbitMQ version; give one such as '4.1.0' or '3.10.8'`,
    );
  const [major, minor] = [Number(read[1]), Number(read[2])];
  return major > 3 || (major === 3 && minor >= 13) ? 'current' : 'legacy';
}

/** A message inside the in-memory broker. */
export interface BrokerMessage {
  content: Buffer;
  /** amqplib's message properties, `headers` always an object; `expiration` as published (a string). */
  properties: BrokerProperties;
  /** The exchange it was last published or dead-lettered to, and its routing keys then. */
  exchange: string;
  routingKeys: string[];
  /** The broker's own death history, most recent first (RabbitMQ 3.13+/4.x). */
  deaths: Death[];
  /** The first death ever (`x-first-death-*`): set once, never changed, whatever the order of `deaths` becomes. */
  firstDeath?: Pick<Death, 'queue' | 'reason' | 'exchange'> | null;
  /** The delivery count it carries out of a quorum queue (core keepsDeliveryCounts); absent on other versions. */
  deliveryCount?: number;
}

/** amqplib's MessageProperties, loosely typed. */
export type BrokerProperties = Record<string, unknown> & { headers: Record<string, unknown>; expiration?: string };

/**
 * Records a death as RabbitMQ 3.13+ does: the entry `{queue, reason}` is counted up and moved to the front (a new one
 * first, count 1), keeping its first event's other fields; the message's `expiration` is removed; a client's `x-death`
 * is ignored. 3.10 (`legacy`) updated a client's `x-death` and left the counted entry in its place.
 */
export function recordDeath(message: BrokerMessage, queue: string, reason: DeathReason, now: number, rules: DeathRules = 'current'): BrokerMessage {
  const history = rules === 'legacy' && message.deaths.length === 0 ? clientDeaths(message.properties.headers['x-death']) : message.deaths;
  const found = history.find((death) => death.queue === queue && death.reason === reason);
  const others = history.filter((death) => death !== found);
  const death: Death = found
    ? { ...found, count: found.count + 1 }
    : {
        queue,
        reason,
        count: 1,
        time: now,
        exchange: message.exchange,
        routingKeys: [...message.routingKeys],
        ...(message.properties.expiration !== undefined ? { originalExpiration: message.properties.expiration } : {}),
      };
  const properties = { ...message.properties, headers: { ...message.properties.headers } };
  delete properties.expiration;
  // Legacy: a counted entry stays where it is (observed on 3.10: the docs say it moves to the front, it does not).
  const deaths = rules === 'legacy' && found ? history.map((d) => (d === found ? death : d)) : [death, ...others];
  // Legacy: a message that came with an x-death of its client's gets no x-first-death-* at all (observed on 3.10).
  const fromClient = rules === 'legacy' && message.deaths.length === 0 && history.length > 0;
  const firstDeath =
    message.firstDeath !== undefined
      ? message.firstDeath
      : fromClient
        ? null
        : { queue: death.queue, reason: death.reason, exchange: death.exchange };
  return { ...message, properties, deaths, firstDeath };
}

/** A client's `x-death` as 3.12 and earlier read it: the entries that are tables with a queue and a reason. */
function clientDeaths(header: unknown): Death[] {
  if (!Array.isArray(header)) return [];
  const text = (v: unknown) => (Buffer.isBuffer(v) ? v.toString() : typeof v === 'string' ? v : undefined);
  return header.flatMap((entry): Death[] => {
    if (typeof entry !== 'object' || entry === null) return [];
    const e = entry as Record<string, unknown>;
    const queue = text(e.queue);
    const reason = text(e.reason) as DeathReason | undefined;
    if (!queue || !reason) return [];
    const time = typeof e.time === 'object' && e.time !== null ? Number((e.time as { value?: unknown }).value) * 1000 : 0;
    const keys = Array.isArray(e['routing-keys']) ? (e['routing-keys'] as unknown[]).map((k) => String(text(k))) : [];
    return [{ queue, reason, count: Number(e.count) || 0, time, exchange: text(e.exchange) ?? '', routingKeys: keys }];
  });
}

/** The `x-death` table of one entry, with amqplib's decoding of each field type. */
const deathTable = (death: Death): Record<string, unknown> => ({
  count: death.count,
  reason: death.reason,
  queue: death.queue,
  time: { '!': 'timestamp', value: Math.floor(death.time / 1000) },
  exchange: death.exchange,
  'routing-keys': [...death.routingKeys],
  ...(death.originalExpiration !== undefined ? { 'original-expiration': death.originalExpiration } : {}),
});

/**
 * The headers a consumer sees: as published, and once the message has died, `x-death` (most recent first),
 * `x-first-death-{queue,reason,exchange}` (the oldest death) and `x-last-death-{queue,reason,exchange}` (the newest).
 */
export function deliveredHeaders(message: BrokerMessage, rules: DeathRules = 'current'): Record<string, unknown> {
  const { headers } = message.properties;
  if (message.deaths.length === 0) return { ...headers };
  const first = message.firstDeath ?? message.deaths[message.deaths.length - 1];
  const last = message.deaths[0];
  const dead = { ...headers, 'x-death': message.deaths.map(deathTable) };
  const oldest = { 'x-first-death-queue': first.queue, 'x-first-death-reason': first.reason, 'x-first-death-exchange': first.exchange };
  // Legacy: no x-last-death-*; x-first-death-* set once: a client's kept, or none written (the first x-death was the client's).
  if (rules === 'legacy') return 'x-first-death-queue' in headers || message.firstDeath === null ? dead : { ...dead, ...oldest };
  return {
    ...dead,
    ...oldest,
    'x-last-death-queue': last.queue,
    'x-last-death-reason': last.reason,
    'x-last-death-exchange': last.exchange,
  };
}

/**
 * RabbitMQ's dead-letter cycle rule: a dead letter that would reach a queue it already died in is dropped there when
 * no death since then (that queue's included) was a rejection. A rejection itself is never checked.
 */
export function isDeadLetterCycle(message: BrokerMessage, target: string, reason: DeathReason): boolean {
  if (reason === 'rejected') return false;
  const at = message.deaths.findIndex((death) => death.queue === target);
  if (at < 0) return false;
  return message.deaths.slice(0, at + 1).every((death) => death.reason !== 'rejected');
}
