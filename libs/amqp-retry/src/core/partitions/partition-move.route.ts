import type { MessageProperties, Options } from 'amqplib';
import { withoutDeliveryCounts } from '../delivery/delivery.count.js';
import { firstRoute } from '../delivery/first-failure.headers.js';
import { readDeathHistory } from '../delivery/x-death.parser.js';
import { BrokerHeader } from '../headers/header.names.js';

/** What a moved message's routing key is read from: its headers and how it was delivered to the queue it leaves. */
export interface MovingMessage {
  properties: { headers?: unknown };
  fields: { exchange: string; routingKey: string };
}

/**
 * The routing key a message leaving `from` (a retired partition, or the queue partitions replace) goes into the hash
 * exchange with: the one it was first published with, since a retry comes back keyed by its tier and the transport
 * reads a body by that key. An unreadable `x-death` keeps the delivered key.
 */
export function movedRoutingKey(message: MovingMessage, from: string): string {
  const headers = message.properties.headers as Record<string, unknown> | undefined;
  const history = readDeathHistory(headers?.[BrokerHeader.death]);
  if (!history.ok) return message.fields.routingKey;
  return firstRoute(headers, history.deaths, from, message.fields).routingKey;
}

/**
 * The properties a moved message is published with: its own, persistent, without `userId` (the broker refuses a
 * publish whose user_id is not the connection's user, and the move would be tried again forever), and without the
 * delivery counts of the queue it leaves (its next queue counts its own).
 */
export function movedProperties(properties: MessageProperties): Options.Publish {
  return { ...properties, headers: withoutDeliveryCounts(properties.headers), userId: undefined, persistent: true };
}
