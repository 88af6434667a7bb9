import type { MessageProperties } from 'amqplib';

/** The properties of a delivered message for unit tests: every field amqplib sets, a publisher's usual values. */
export const sampleProperties = (over: Partial<Omit<MessageProperties, 'headers'>> & { headers?: Record<string, unknown> } = {}): MessageProperties =>
  ({
    contentType: 'application/json',
    contentEncoding: undefined,
    headers: {},
    deliveryMode: 2,
    priority: undefined,
    correlationId: 'c-1',
    replyTo: undefined,
    expiration: undefined,
    messageId: 'm-1',
    timestamp: 1_700_000_000,
    type: 'order.created',
    userId: undefined,
    appId: 'shop',
    clusterId: undefined,
    ...over,
  }) as MessageProperties;
