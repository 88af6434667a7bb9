import type { Message } from 'amqplib';
import { findReturnedPublish, type PendingPublish } from './returned-publish.matcher.js';

const pending = (over: Partial<PendingPublish> = {}): PendingPublish => ({
  exchange: 'shop',
  routingKey: 'order.created',
  messageId: 'm-1',
  content: Buffer.from('{"id":1}'),
  returned: false,
  ...over,
});

const returned = (over: { exchange?: string; routingKey?: string; messageId?: string; body?: string } = {}) =>
  ({
    fields: { exchange: over.exchange ?? 'shop', routingKey: over.routingKey ?? 'order.created', replyCode: 312, replyText: 'NO_ROUTE' },
    properties: { messageId: 'messageId' in over ? over.messageId : 'm-1', headers: {} },
    content: Buffer.from(over.body ?? '{"id":1}'),
  }) as unknown as Message;

describe('findReturnedPublish', () => {
  it('matches on exchange, routing key, message id and body', () => {
    const target = pending();
    expect(
      findReturnedPublish([pending({ routingKey: 'x' }), pending({ messageId: 'm-2' }), pending({ content: Buffer.from('{}') }), target], returned()),
    ).toBe(target);
  });

  it('takes the earliest of identical publishes not yet marked returned', () => {
    const first = pending({ returned: true });
    const second = pending();
    const third = pending();
    expect(findReturnedPublish([first, second, third], returned())).toBe(second);
  });

  it('matches publishes without a message id', () => {
    const anonymous = pending({ messageId: undefined });
    expect(findReturnedPublish([anonymous], returned({ messageId: undefined }))).toBe(anonymous);
  });

  it('finds nothing for a return of another publisher', () => {
    expect(findReturnedPublish([pending()], returned({ exchange: 'elsewhere' }))).toBeUndefined();
  });
});
