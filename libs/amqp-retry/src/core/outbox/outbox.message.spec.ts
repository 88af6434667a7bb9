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

  it.each([
    [{ priority: 300 }, RangeError, /Invalid priority 300: a priority is a whole number from 0 to 255/],
    [{ priority: 1.5 }, RangeError, /Invalid priority 1.5/],
    [{ correlationId: 'c'.repeat(256) }, RangeError, /Invalid correlationId: 256 bytes/],
    [{ type: 7 }, TypeError, /Invalid type \(a number\)/],
    [{ headers: { ['k'.repeat(256)]: 1 } }, TypeError, /amqplib cannot encode them/],
    [{ headers: { big: 'x'.repeat(70_000) } }, RangeError, /Invalid headers: about \d+ bytes encoded/],
  ])('refuses properties the engine would refuse at publish (#%#), with its error', (properties, type, error) => {
    const write = () => readOutboxMessage({ exchange: 'e', routingKey: 'k', body: 1, properties: properties as never }, id);
    expect(write).toThrow(type);
    expect(write).toThrow(error);
  });

  it('refuses a direct reply-to address the broker would close the connection over, and any delayed to one', () => {
    const real = 'amq.rabbitmq.reply-to.g1h2AA1yZXBseUA5MjQ4ODg0AAAI0wAAAABrC6WG.60snwiMOpEPsrY/tBmUPwA==';
    expect(() => readOutboxMessage({ exchange: '', routingKey: 'amq.rabbitmq.reply-to.g1h2AA==.forged', body: 1 }, id)).toThrow(
      /^OutboxPublisher.publish: routingKey is "amq.rabbitmq.reply-to.g1h2AA==.forged" is no direct reply-to address RabbitMQ hands out/,
    );
    expect(() => readOutboxMessage({ exchange: '', routingKey: real, body: 1, delay: 10 }, id)).toThrow(/reply without a delay/);
    expect(readOutboxMessage({ exchange: '', routingKey: real, body: 1 }, id).routingKey).toBe(real);
    expect(readOutboxMessage({ exchange: 'replies', routingKey: 'amq.rabbitmq.reply-to.x', body: 1 }, id).exchange).toBe('replies');
  });

  it('refuses a bad delay or expiration with a RangeError', () => {
    expect(() => readOutboxMessage({ exchange: 'e', routingKey: 'k', body: 1, delay: 'soon' }, id)).toThrow(RangeError);
    expect(() => readOutboxMessage({ exchange: 'e', routingKey: 'k', body: 1, properties: { expiration: -1 } }, id)).toThrow(RangeError);
  });
});

describe('storedProperties', () => {
  it('reads jsonb as an object or as text', () => {
    expect(storedProperties({ messageId: 'a' })).toEqual({ properties: { messageId: 'a' } });
    expect(storedProperties('{"messageId":"a"}')).toEqual({ properties: { messageId: 'a' } });
  });

  it('answers a problem naming the column for a value that is no JSON object, whether the driver parsed it or not', () => {
    const problem = (json: string) => ({ problem: `the properties column holds ${json}, not a JSON object of AMQP properties` });
    expect(storedProperties('x')).toEqual(problem('"x"')); // the jsonb string "x", parsed by the driver
    expect(storedProperties('"x"')).toEqual(problem('"x"')); // the same, handed over as text
    expect(storedProperties('{"messageId":')).toEqual(problem('"{\\"messageId\\":"'));
    expect(storedProperties(5)).toEqual(problem('5'));
    expect(storedProperties([1])).toEqual(problem('[1]'));
    expect(storedProperties(null)).toEqual(problem('null'));
    expect(storedProperties('null')).toEqual(problem('null'));
    expect(storedProperties(undefined)).toEqual(problem('undefined'));
    const long = storedProperties('y'.repeat(500));
    expect('problem' in long && long.problem).toBe(`the properties column holds "${'y'.repeat(79)}…, not a JSON object of AMQP properties`);
  });
});
