import type { MessageProperties, Options } from 'amqplib';

/**
 * The properties of a delivered message to publish a copy with (parked, or forwarded after a delay). Two are left
 * out on purpose: `expiration`, which would let the copy expire (or leave a delay level early), and `userId`, which
 * the broker refuses unless it is the publishing connection's user. The copy is always persistent.
 */
export function republishProperties(properties: MessageProperties, headers: Record<string, unknown>): Options.Publish {
  return {
    contentType: properties.contentType,
    contentEncoding: properties.contentEncoding,
    headers,
    persistent: true,
    priority: properties.priority,
    correlationId: properties.correlationId,
    replyTo: properties.replyTo,
    messageId: properties.messageId,
    timestamp: properties.timestamp,
    type: properties.type,
    appId: properties.appId,
  };
}
