import type { Message } from 'amqplib';

/** What identifies a mandatory publish awaiting its confirm, to match a basic.return against it. */
export interface PendingPublish {
  exchange: string;
  routingKey: string;
  messageId?: string;
  content: Buffer;
  returned: boolean;
}

/**
 * Finds the publish a basic.return belongs to: the earliest pending one with the same exchange, routing key, message
 * id and body not marked returned yet. A return has no sequence number, but the broker routes a channel's publishes in
 * order and returns before it acks, so the earliest match is it; this keeps the user's messages free of our headers.
 */
export function findReturnedPublish(pending: Iterable<PendingPublish>, returned: Message): PendingPublish | undefined {
  const { exchange, routingKey } = returned.fields;
  for (const publish of pending) {
    if (
      !publish.returned &&
      publish.exchange === exchange &&
      publish.routingKey === routingKey &&
      publish.messageId === returned.properties.messageId &&
      publish.content.equals(returned.content)
    ) {
      return publish;
    }
  }
  return undefined;
}
