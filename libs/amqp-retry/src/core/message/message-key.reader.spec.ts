import type { ConsumeMessage } from 'amqplib';
import { headerKey, MAX_KEY_LENGTH, messageIdKey, readMessageKey } from './message-key.reader.js';

const message = (properties: Partial<ConsumeMessage['properties']>) =>
  ({ properties, fields: {}, content: Buffer.from('{}') }) as unknown as ConsumeMessage;

describe('message keys', () => {
  it('the default key is the message id; none when it is missing or empty', () => {
    expect(readMessageKey(messageIdKey, {}, message({ messageId: 'm-1' }), 'idempotency key')).toEqual({ ok: true, key: 'm-1' });
    expect(readMessageKey(messageIdKey, {}, message({}), 'idempotency key')).toEqual({ ok: true, key: undefined });
    expect(readMessageKey(messageIdKey, {}, message({ messageId: '' }), 'idempotency key')).toEqual({ ok: true, key: undefined });
  });

  it('a header key takes strings and numbers, nothing else', () => {
    const key = headerKey('x-customer');
    expect(readMessageKey(key, {}, message({ headers: { 'x-customer': 'c-9' } }), 'ordering key')).toEqual({ ok: true, key: 'c-9' });
    expect(readMessageKey(key, {}, message({ headers: { 'x-customer': 42 } }), 'ordering key')).toEqual({ ok: true, key: '42' });
    expect(readMessageKey(key, {}, message({ headers: { 'x-customer': { a: 1 } } }), 'ordering key')).toEqual({ ok: true, key: undefined });
    expect(readMessageKey(key, {}, message({}), 'ordering key')).toEqual({ ok: true, key: undefined });
  });

  it('a key function that throws, or returns a non-string, an empty or an overlong string, is a problem named for the user', () => {
    const read = (fn: (p: unknown) => unknown) => readMessageKey(fn as never, { id: 1 }, message({}), 'idempotency key');
    expect(
      read(() => {
        throw new Error('no id');
      }),
    ).toEqual({ ok: false, problem: 'the idempotency key function threw: no id' });
    expect(read(() => 7)).toEqual({ ok: false, problem: 'the idempotency key function returned 7, not a non-empty string' });
    expect(read(() => '')).toEqual({ ok: false, problem: 'the idempotency key function returned "", not a non-empty string' });
    expect(read(() => 'x'.repeat(MAX_KEY_LENGTH + 1))).toMatchObject({ ok: false, problem: expect.stringContaining('at most 512') });
    expect(read((p) => `order-${(p as { id: number }).id}`)).toEqual({ ok: true, key: 'order-1' });
  });
});
