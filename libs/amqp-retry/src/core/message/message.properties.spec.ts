import type { MessageProperties } from 'amqplib';
import { MAX_TTL_MS } from '../time/duration.reader.js';
import { readExpiration, republishProperties } from './message.properties.js';

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

describe('readExpiration', () => {
  it('takes whole milliseconds from 0 to 2^32 - 1, as a number or digits, and gives digits', () => {
    expect(readExpiration(undefined)).toBeUndefined();
    expect(readExpiration(0)).toBe('0');
    expect(readExpiration('200')).toBe('200');
    expect(readExpiration('0200')).toBe('200');
    expect(readExpiration(MAX_TTL_MS)).toBe(String(MAX_TTL_MS));
  });

  it.each([[-1], [1.5], [2 ** 32], [Number.POSITIVE_INFINITY], ['-1'], [' 1'], ['1e3'], [''], ['99999999999'], [true]])(
    'refuses %p with a RangeError that names it and the range',
    (value) => {
      expect(() => readExpiration(value)).toThrow(RangeError);
      expect(() => readExpiration(value)).toThrow(/from 0 to 4294967295/);
    },
  );
});
