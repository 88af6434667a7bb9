import type { ConsumeMessage, GetMessage, Options } from 'amqplib';
import { deliveredHeaders, type BrokerMessage, type BrokerProperties, type DeathRules } from './dead-letter.rules.js';
import type { Enqueued } from './memory.queue.js';

/**
 * A message's properties as amqplib sends and then decodes them: every field present (undefined when not set),
 * `headers` an object, `persistent` as `deliveryMode` 2, `CC`/`BCC` as headers, `expiration` a string.
 */
export function publishedProperties(options: Options.Publish = {}): BrokerProperties {
  const headers: Record<string, unknown> = { ...(options.headers as Record<string, unknown> | undefined) };
  const list = (value: string | string[] | undefined) => (value === undefined ? undefined : Array.isArray(value) ? value : [value]);
  if (options.CC !== undefined) headers.CC = list(options.CC);
  if (options.BCC !== undefined) headers.BCC = list(options.BCC);
  const { persistent, deliveryMode: mode } = options;
  const deliveryMode = persistent !== undefined ? (persistent ? 2 : 1) : typeof mode === 'number' ? mode : mode ? 2 : undefined;
  return {
    contentType: options.contentType,
    contentEncoding: options.contentEncoding,
    headers: cloneHeaders(headers),
    deliveryMode,
    priority: options.priority,
    correlationId: options.correlationId,
    replyTo: options.replyTo,
    expiration: options.expiration === undefined ? undefined : String(options.expiration),
    messageId: options.messageId,
    timestamp: options.timestamp,
    type: options.type,
    userId: options.userId,
    appId: options.appId,
    clusterId: undefined,
  };
}

/** A deep copy of a field table, as encoding and decoding would make it: Buffers copied, undefined values left out. */
function cloneHeaders(value: Record<string, unknown>): Record<string, unknown> {
  const copy = (v: unknown): unknown => {
    if (Buffer.isBuffer(v)) return Buffer.from(v);
    if (Array.isArray(v)) return v.map(copy);
    if (typeof v === 'object' && v !== null) return cloneHeaders(v as Record<string, unknown>);
    return v;
  };
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) if (v !== undefined) out[key] = copy(v);
  return out;
}

/** A publish as the broker takes it: no deaths yet; its routing keys its key, then CC and BCC (sender-selected distribution). */
export function publishedMessage(exchange: string, routingKey: string, content: Buffer, properties: BrokerProperties): BrokerMessage {
  const extra = [properties.headers.CC, properties.headers.BCC].flatMap((v) => (Array.isArray(v) ? v.map(String) : []));
  return { content, properties, exchange, routingKeys: [routingKey, ...extra], deaths: [] };
}

/** The properties a consumer gets: the headers with the broker's death headers, and a quorum queue's delivery count. */
function deliveredProperties(entry: Enqueued, quorum: boolean, rules: DeathRules): ConsumeMessage['properties'] {
  const headers = cloneHeaders(deliveredHeaders(entry.message, rules));
  delete headers.BCC;
  // The queue's own count once it gave the message back; until then the count carried in (RabbitMQ 4.0 to 4.2).
  const count = entry.deliveryCount > 0 ? entry.deliveryCount : (entry.carried ?? 0);
  if (quorum && count > 0) headers['x-delivery-count'] = count;
  return { ...entry.message.properties, headers } as unknown as ConsumeMessage['properties'];
}

/** A delivery as amqplib hands it to a consumer's callback. */
export function consumeMessage(entry: Enqueued, deliveryTag: number, consumerTag: string, quorum: boolean, rules: DeathRules): ConsumeMessage {
  return {
    content: Buffer.from(entry.message.content),
    fields: {
      consumerTag,
      deliveryTag,
      redelivered: entry.redelivered,
      exchange: entry.message.exchange,
      routingKey: entry.message.routingKeys[0] ?? '',
    },
    properties: deliveredProperties(entry, quorum, rules),
  };
}

/** A message as `channel.get()` resolves with it. */
export function getMessage(entry: Enqueued, deliveryTag: number, messageCount: number, quorum: boolean, rules: DeathRules): GetMessage {
  const { fields, content, properties } = consumeMessage(entry, deliveryTag, '', quorum, rules);
  const { consumerTag: _unused, ...rest } = fields;
  return { content, properties, fields: { ...rest, messageCount } };
}

/** A message the broker returned (mandatory, unroutable), as amqplib emits it with 'return'. */
export function returnedMessage(message: BrokerMessage): ConsumeMessage {
  return {
    content: Buffer.from(message.content),
    fields: {
      replyCode: 312,
      replyText: 'NO_ROUTE',
      exchange: message.exchange,
      routingKey: message.routingKeys[0] ?? '',
    } as unknown as ConsumeMessage['fields'],
    properties: { ...message.properties, headers: cloneHeaders(message.properties.headers) } as unknown as ConsumeMessage['properties'],
  };
}
