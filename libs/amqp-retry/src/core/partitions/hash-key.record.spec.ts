import { decideHashKey, describeHashKey, readHashKeyRecord, writeHashKeyRecord } from './hash-key.record.js';

const header = (name: string) => ({ 'hash-header': name });

describe('the hash key record', () => {
  it('reads what it writes, and nothing unreadable', () => {
    expect(readHashKeyRecord(writeHashKeyRecord({ hashArguments: header('x-key') }))).toEqual({ hashArguments: header('x-key') });
    for (const text of ['not json', 'null', '{}', '{"hashArguments":{}}', '{"hashArguments":{"hash-header":3}}'])
      expect(readHashKeyRecord(Buffer.from(text))).toBeUndefined();
  });

  it('describes a key as partitions.key is written', () => {
    expect(describeHashKey(header('x-key'))).toBe("{ header: 'x-key' }");
    expect(describeHashKey({ 'hash-property': 'message_id' })).toBe("'messageId'");
  });

  it('records for a new exchange, keeps a matching one, refuses another key, and records an unknown one unverified', () => {
    expect(decideHashKey(false, { hashArguments: header('x-key') }, header('x-customer'))).toEqual({ action: 'record' });
    expect(decideHashKey(true, { hashArguments: header('x-key') }, header('x-key'))).toEqual({ action: 'keep' });
    expect(decideHashKey(true, { hashArguments: header('x-key') }, header('x-customer'))).toEqual({ action: 'mismatch', found: header('x-key') });
    expect(decideHashKey(true, { hashArguments: header('x-key') }, { 'hash-property': 'message_id' })).toMatchObject({ action: 'mismatch' });
    expect(decideHashKey(true, undefined, header('x-key'))).toEqual({ action: 'unverified' });
  });
});
