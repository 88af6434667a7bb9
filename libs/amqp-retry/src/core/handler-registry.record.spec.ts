import { latestRecords, pruneCandidates, readHandlerRecord, supersededRecords, type HandlerRecord } from './handler-registry.record.js';

const record = (queue: string, over: Partial<HandlerRecord> = {}): HandlerRecord => ({
  queue,
  errorQueue: `${queue}.error`,
  tiers: [`${queue}.retry.1.1s.abc`],
  queueType: 'classic',
  recordedAt: '2026-01-01T00:00:00.000Z',
  ...over,
});

describe('handler registry records', () => {
  it('reads what a start writes', () => {
    const written = record('orders', { queueType: 'quorum' });
    expect(readHandlerRecord(Buffer.from(JSON.stringify(written)))).toEqual(written);
  });

  it('reads nothing from a malformed record', () => {
    for (const text of ['', 'not json', 'null', '[]', '{"queue":"q"}', '{"queue":"","errorQueue":"e"}', '{"queue":1,"errorQueue":"e"}'])
      expect(readHandlerRecord(Buffer.from(text))).toBeUndefined();
  });

  it('fills what an older or partial record lacks', () => {
    expect(readHandlerRecord(Buffer.from('{"queue":"q","errorQueue":"q.err","tiers":["t",3]}'))).toEqual({
      queue: 'q',
      errorQueue: 'q.err',
      tiers: ['t'],
      queueType: 'classic',
      recordedAt: '',
    });
  });

  it('keeps the newest record of each queue', () => {
    const latest = latestRecords([record('b'), record('a', { errorQueue: 'old' }), record('a', { errorQueue: 'new' })]);
    expect(latest.map((r) => [r.queue, r.errorQueue])).toEqual([
      ['a', 'new'],
      ['b', 'b.error'],
    ]);
  });

  it('removes the older records of the queue just recorded and unreadable ones, never another queue’s', () => {
    expect(supersededRecords([record('a'), undefined, record('b'), record('a')], 'a')).toEqual([0, 1, 3]);
    expect(supersededRecords([record('b')], 'a')).toEqual([]);
  });

  it('checks the oldest records of other queues for deletion, a bounded number', () => {
    expect(pruneCandidates([record('a'), undefined, record('b'), record('c'), record('d')], 'a', 2)).toEqual([2, 3]);
    expect(pruneCandidates([record('a')], 'a')).toEqual([]);
  });
});
