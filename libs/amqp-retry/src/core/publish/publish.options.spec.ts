import { publishProperties, readPublishOptions } from './publish.options.js';

describe('readPublishOptions', () => {
  it('takes an object, and none as no options', () => {
    const given = { delay: '1s' };
    expect(readPublishOptions(given, 'RetryPublisher.publish')).toBe(given);
    expect(readPublishOptions(undefined, 'RetryPublisher.publish')).toEqual({});
  });

  it.each([
    [null, 'null'],
    [[], 'an array'],
    ['30s', 'a string'],
  ])('refuses %j with a TypeError naming the caller and the fix', (options, shown) => {
    expect(() => readPublishOptions(options as never, 'RetryPublisher.publish')).toThrow(TypeError);
    expect(() => readPublishOptions(options as never, 'RetryPublisher.publish')).toThrow(
      `RetryPublisher.publish: the options are ${shown}; give an object of publish options, e.g. { delay: '30s' }, or leave them out`,
    );
  });
});

describe('publishProperties', () => {
  it('sets the message id, persistence and headers always, and each other property only when given', () => {
    const properties = publishProperties({}, { contentType: 'application/json' });
    expect(properties).toEqual({
      contentType: 'application/json',
      persistent: true,
      messageId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      headers: undefined,
    });
    expect(Object.keys(properties)).toEqual(['contentType', 'persistent', 'messageId', 'headers']);
  });

  it('takes every basic property given, a Date timestamp as whole seconds', () => {
    const at = new Date('2030-01-02T03:04:05.678Z');
    const given = {
      messageId: 'm-1',
      persistent: false,
      headers: { tenant: 'acme' },
      expiration: 500,
      priority: 4,
      correlationId: 'c-1',
      replyTo: 'answers',
      type: 'order.created.v2',
      appId: 'shop',
      timestamp: at,
    };
    expect(publishProperties(given, {})).toEqual({ ...given, timestamp: Math.floor(at.getTime() / 1000) });
    expect(publishProperties({ timestamp: 1_700_000_000 }, {}).timestamp).toBe(1_700_000_000);
  });

  it("keeps the caller's base properties but for those the options set", () => {
    const properties = publishProperties({ persistent: false }, { mandatory: true, persistent: true, contentType: 'text/plain' });
    expect(properties).toMatchObject({ mandatory: true, persistent: false, contentType: 'text/plain' });
  });
});
