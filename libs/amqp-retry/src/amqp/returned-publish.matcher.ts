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
 * id and body that is not marked returned yet. A return carries no sequence number, but the broker routes a
 * channel's publishes in order and sends a return before the ack of the same message, so the earliest match is it.
 * Two identical messages to one exchange and key route alike (bar a binding change in between), so taking the
 * earlier of them is right. This keeps the user's messages free of any correlation header of ours.
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
