import type { MessageProperties } from 'amqplib';
import { republishProperties } from './message-properties.js';

describe('republishProperties', () => {
  const properties: MessageProperties = {
    contentType: 'application/json',
    contentEncoding: 'utf-8',
    headers: { a: 1 },
    deliveryMode: 1,
    priority: 4,
    correlationId: 'c',
    replyTo: 'r',
    expiration: '500',
    messageId: 'm',
    timestamp: 1_700_000_000,
    type: 't',
    userId: 'someone',
    appId: 'app',
    clusterId: undefined,
  };

  it('keeps every property a copy may carry, with the given headers, persistent', () => {
    expect(republishProperties(properties, { b: 2 })).toEqual({
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      headers: { b: 2 },
      persistent: true,
      priority: 4,
      correlationId: 'c',
      replyTo: 'r',
      messageId: 'm',
      timestamp: 1_700_000_000,
      type: 't',
      appId: 'app',
    });
  });
});
