import type { ConsumeMessage } from 'amqplib';
import { readMessageKey } from '../message/message-key.reader.js';
import { partitionLaneKey } from './partition-key.lane.js';

const message = (headers: Record<string, unknown>, messageId?: string) => ({ properties: { headers, messageId } }) as unknown as ConsumeMessage;
const lane = (key: Parameters<typeof partitionLaneKey>[0], m: ConsumeMessage) => readMessageKey(partitionLaneKey(key), undefined, m, 'ordering key');

describe('partitionLaneKey', () => {
  it('keeps a header of 1 to 512 characters as it is, and numbers as decimals', () => {
    expect(lane({ header: 'x-key' }, message({ 'x-key': 'a-1' }))).toEqual({ ok: true, key: 'a-1' });
    expect(lane({ header: 'x-key' }, message({ 'x-key': 'k'.repeat(512) }))).toEqual({ ok: true, key: 'k'.repeat(512) });
    expect(lane({ header: 'x-key' }, message({ 'x-key': 42 }))).toEqual({ ok: true, key: '42' });
  });

  it('gives the empty key and a key over 512 characters a lane of their own, by digest, never a problem', () => {
    const empty = lane({ header: 'x-key' }, message({ 'x-key': '' }));
    expect(empty).toEqual({ ok: true, key: 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' });
    const long = lane({ header: 'x-key' }, message({ 'x-key': 'k'.repeat(513) }));
    const other = lane({ header: 'x-key' }, message({ 'x-key': `${'k'.repeat(512)}j` }));
    expect(long).toMatchObject({ ok: true, key: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    expect(other).toMatchObject({ ok: true, key: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    expect(long).not.toEqual(other);
  });

  it('takes a missing header, one of another type, and a missing message id as no key', () => {
    expect(lane({ header: 'x-key' }, message({}))).toEqual({ ok: true, key: undefined });
    expect(lane({ header: 'x-key' }, message({ 'x-key': true }))).toEqual({ ok: true, key: undefined });
    expect(lane('messageId', message({}))).toEqual({ ok: true, key: undefined });
    expect(lane('messageId', message({}, 'm-7'))).toEqual({ ok: true, key: 'm-7' });
    expect(lane('messageId', message({}, ''))).toMatchObject({ ok: true, key: expect.stringMatching(/^sha256:/) });
  });
});
