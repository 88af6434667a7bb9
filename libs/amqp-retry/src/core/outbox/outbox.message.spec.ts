import { readOutboxMessage, storedProperties } from './outbox.message.js';

const id = () => 'generated-id';

describe('readOutboxMessage', () => {
  it('writes a JSON body with a new message id, persistent', () => {
    expect(readOutboxMessage({ exchange: 'orders', routingKey: 'order.created', body: { id: 42 } }, id)).toEqual({
      exchange: 'orders',
      routingKey: 'order.created',
      body: Buffer.from('{"id":42}'),
      properties: { contentType: 'application/json', persistent: true, messageId: 'generated-id' },
      orderKey: null,
      delayMs: 0,
    });
  });

  it('keeps a Buffer, the given properties, the order key and the delay', () => {
    const record = readOutboxMessage(
      {
        exchange: '',
        routingKey: 'q',
        body: Buffer.from([1, 2]),
        properties: { messageId: 'm-1', headers: { a: 1, b: ['x'] }, persistent: false, correlationId: 'c', expiration: 60_000 },
        orderKey: 'customer-7',
        delay: '30s',
      },
      id,
    );
    expect(record).toMatchObject({ body: Buffer.from([1, 2]), orderKey: 'customer-7', delayMs: 30_000 });
    expect(record.properties).toEqual({ messageId: 'm-1', headers: { a: 1, b: ['x'] }, persistent: false, correlationId: 'c', expiration: '60000' });
  });

  it.each([
    [{ exchange: 1, routingKey: 'k', body: 1 }, /exchange is 1/],
    [{ exchange: 'e', routingKey: 'k'.repeat(256), body: 1 }, /routingKey is/],
    [{ exchange: 'e', routingKey: 'k', body: undefined }, /a body of type undefined has no JSON form/],
    [{ exchange: 'e', routingKey: 'k', body: 1, orderKey: '' }, /orderKey is ""/],
    [{ exchange: 'e', routingKey: 'k', body: 1, properties: { userId: 'root' } }, /properties has userId/],
    [{ exchange: 'e', routingKey: 'k', body: 1, properties: { headers: { n: 10n } } }, /headers must hold JSON values/],
    [{ exchange: 'e', routingKey: 'k', body: 1, properties: { headers: { b: Buffer.from('x') } } }, /headers must hold JSON values/],
    [{ exchange: 'e', routingKey: 'k', body: 1, properties: { messageId: '' } }, /messageId is ""/],
  ])('refuses bad message #%# before anything is written', (message, error) => {
    expect(() => readOutboxMessage(message as never, id)).toThrow(error);
  });

  it('refuses a bad delay or expiration with a RangeError', () => {
    expect(() => readOutboxMessage({ exchange: 'e', routingKey: 'k', body: 1, delay: 'soon' }, id)).toThrow(RangeError);
    expect(() => readOutboxMessage({ exchange: 'e', routingKey: 'k', body: 1, properties: { expiration: -1 } }, id)).toThrow(RangeError);
  });
});

describe('storedProperties', () => {
  it('reads jsonb as an object or as text', () => {
    expect(storedProperties({ messageId: 'a' })).toEqual({ messageId: 'a' });
    expect(storedProperties('{"messageId":"a"}')).toEqual({ messageId: 'a' });
    expect(storedProperties(null)).toEqual({});
  });
});
