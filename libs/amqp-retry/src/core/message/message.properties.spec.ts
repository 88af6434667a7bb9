import type { MessageProperties } from 'amqplib';
import { MAX_TTL_MS } from '../time/duration.reader.js';
import { checkPublishProperties, checkPublishRoute, MAX_PUBLISH_HEADERS_BYTES, readExpiration, republishProperties } from './message.properties.js';

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

describe('checkPublishProperties', () => {
  it("takes a userId only when it is the user of one of the connection's URLs (the broker closes the channel for another)", () => {
    expect(() => checkPublishProperties({ userId: 'orders' }, ['guest', 'orders'])).not.toThrow();
    expect(() => checkPublishProperties({ userId: 'mallory' }, ['guest'])).toThrow(
      new RangeError(`Invalid userId "mallory": the broker takes only the connection's own user ("guest").`),
    );
    expect(() => checkPublishProperties({}, ['guest'])).not.toThrow();
  });

  it('refuses direct reply-to as a replyTo (the broker closes a channel not consuming its replies) and takes an address it handed out', () => {
    expect(() => checkPublishProperties({ replyTo: 'amq.rabbitmq.reply-to' })).toThrow(
      /^Invalid replyTo "amq.rabbitmq.reply-to": .*use RetryClient.send/,
    );
    expect(() => checkPublishProperties({ replyTo: 'amq.rabbitmq.reply-to.g1h2AA==.key' })).not.toThrow();
    expect(() => checkPublishProperties({ replyTo: 'orders.replies' })).not.toThrow();
  });

  it('refuses a CC or BCC header that is no array, which the broker closes the channel over', () => {
    for (const value of [5, 'eu.orders', null, true, { a: 1 }]) {
      expect(() => checkPublishProperties({ headers: { CC: value } })).toThrow(/^Invalid header CC .*: give an array of routing keys/);
      expect(() => checkPublishProperties({ headers: { BCC: value } })).toThrow(/^Invalid header BCC /);
    }
    expect(() => checkPublishProperties({ headers: { CC: ['eu.orders'], BCC: [], cc: 5, CCx: 'a' } })).not.toThrow();
    expect(() => checkPublishProperties({ headers: { CC: undefined } })).not.toThrow();
  });

  it('takes what amqplib and the broker take', () => {
    const fine = {
      contentType: 'application/json',
      messageId: 'm'.repeat(255),
      priority: 255,
      persistent: true,
      deliveryMode: 2,
      timestamp: 1_700_000_000,
      headers: { a: 1, b: ['x', { c: null }] },
      expiration: '60000',
    };
    expect(() => checkPublishProperties(fine)).not.toThrow();
    expect(() => checkPublishProperties({ priority: 0, headers: undefined })).not.toThrow();
  });

  it.each([
    [{ priority: 256 }, RangeError, /Invalid priority 256/],
    [{ priority: -1 }, RangeError, /Invalid priority -1/],
    [{ priority: Number.NaN }, RangeError, /Invalid priority NaN/],
    [{ priority: '3' }, RangeError, /Invalid priority "3"/],
    [{ deliveryMode: 3 }, RangeError, /Invalid deliveryMode 3/],
    [{ timestamp: 'now' }, TypeError, /Invalid timestamp "now"/],
    [{ timestamp: -1 }, RangeError, /Invalid timestamp -1: a timestamp is a whole number of seconds since the epoch, from 0 \(1970\) on/],
    [{ timestamp: 1.5 }, RangeError, /Invalid timestamp 1.5: a timestamp is a whole number/],
    [{ timestamp: 2 ** 64 }, RangeError, /Invalid timestamp 18446744073709552000/],
    [{ timestamp: 0 }, undefined, undefined],
    [{ appId: 'é'.repeat(128) }, RangeError, /Invalid appId: 256 bytes, where AMQP allows at most 255/],
    [{ replyTo: {} }, TypeError, /Invalid replyTo \(a object\)/],
    [{ headers: 'x' }, TypeError, /Invalid headers "x"/],
    [{ headers: { n: 10n } }, TypeError, /amqplib cannot encode them/],
    [{ headers: { s: 'x'.repeat(MAX_PUBLISH_HEADERS_BYTES) } }, RangeError, /put large data in the body/],
    [
      { headers: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`h${i}`, 'x'.repeat(256 * 3)])) },
      RangeError,
      /put large data in the body/,
    ],
    [{ headers: Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`${i}`.padEnd(85, 'k'), 'é'.repeat(256)])) }, undefined, undefined],
    [{ expiration: 'soon' }, RangeError, /Invalid expiration "soon"/],
  ])('refuses bad properties #%# naming the property', (properties, type, error) => {
    if (type === undefined) return void expect(() => checkPublishProperties(properties as never)).not.toThrow();
    expect(() => checkPublishProperties(properties as never)).toThrow(type);
    expect(() => checkPublishProperties(properties as never)).toThrow(error);
  });
});

describe('checkPublishRoute', () => {
  it('refuses an exchange name or a routing key over 255 bytes of UTF-8, naming the limit', () => {
    expect(() => checkPublishRoute('x'.repeat(300), 'k')).toThrow(/Invalid exchange name: 300 bytes of UTF-8, where AMQP allows at most 255/);
    expect(() => checkPublishRoute('x', 'é'.repeat(200))).toThrow(RangeError);
    expect(() => checkPublishRoute('x', 'é'.repeat(200))).toThrow(/routing key: 400 bytes/);
    expect(() => checkPublishRoute('x'.repeat(255), 'é'.repeat(127))).not.toThrow();
    expect(() => checkPublishRoute('', '')).not.toThrow();
  });

  it("checks a delayed publish's CC and BCC keys, as properties or headers, and no others", () => {
    const long = 'k'.repeat(256);
    expect(() => checkPublishRoute('x', 'k', { CC: ['a', long] })).toThrow(/Invalid CC key: 256 bytes/);
    expect(() => checkPublishRoute('x', 'k', { BCC: long })).toThrow(/Invalid BCC key/);
    expect(() => checkPublishRoute('x', 'k', { headers: { CC: [Buffer.alloc(256)] } })).toThrow(/Invalid CC key/);
    expect(() => checkPublishRoute('x', 'k', { headers: { BCC: ['é'.repeat(128)] } })).toThrow(/Invalid BCC key: 256 bytes/);
    expect(() => checkPublishRoute('x', 'k', { CC: ['a'.repeat(255)], headers: { BCC: ['b'] } })).not.toThrow();
    expect(() => checkPublishRoute('x', 'k')).not.toThrow();
  });
});
