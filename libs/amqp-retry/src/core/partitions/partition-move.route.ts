import { firstRoute } from '../delivery/first-failure.headers.js';
import { readDeathHistory } from '../delivery/x-death.parser.js';
import { BrokerHeader } from '../headers/header.names.js';

/** What a moved message's routing key is read from: its headers and how it was delivered to the queue it leaves. */
export interface MovingMessage {
  properties: { headers?: unknown };
  fields: { exchange: string; routingKey: string };
}

/**
 * The routing key a message leaving `from` (a partition beyond `count`, or the queue of the unpartitioned handler that
 * partitions replace) is published into the hash exchange with: the key it was first published with. A retry comes
 * back to `from` keyed by the tier it waited in, and the partition it moves to reads a body without the envelope (the
 * transport) by that key: the publisher's must go with it. The hash exchange hashes the partition key, never this.
 * An unreadable `x-death` keeps the delivered key (the partition parks such a message as malformed).
 */
export function movedRoutingKey(message: MovingMessage, from: string): string {
  const headers = message.properties.headers as Record<string, unknown> | undefined;
  const history = readDeathHistory(headers?.[BrokerHeader.death]);
  if (!history.ok) return message.fields.routingKey;
  return firstRoute(headers, history.deaths, from, message.fields).routingKey;
}
