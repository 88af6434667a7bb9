import {
  isHeldElsewhere,
  latestRecords,
  MAX_RECORDED_APPLICATIONS,
  pruneCandidates,
  readHandlerRecord,
  recordedApplications,
  supersededRecords,
  type HandlerRecord,
} from './handler-registry.record.js';

const record = (queue: string, over: Partial<HandlerRecord> = {}): HandlerRecord => ({
  queue,
  errorQueue: `${queue}.error`,
  tiers: [`${queue}.retry.1.1s.abc`],
  queueType: 'classic',
  applications: [],
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
      applications: [],
      recordedAt: '',
    });
  });

  it('reads the applications of a record, each once, bounded, and none from a record written before they were', () => {
    const read = (applications: unknown) =>
      readHandlerRecord(Buffer.from(JSON.stringify({ queue: 'q', errorQueue: 'e', applications })))?.applications;
    expect(read(['a', 'b', 'a', '', 7, null])).toEqual(['a', 'b']);
    expect(read('a')).toEqual([]);
    expect(read(undefined)).toEqual([]);
    expect(read(Array.from({ length: 40 }, (_, i) => `app-${i}`))).toHaveLength(MAX_RECORDED_APPLICATIONS);
  });

  it("names the starting application first, then those of the queue's earlier records, newest first", () => {
    const earlier = [
      record('ladder', { applications: ['a'] }),
      record('other', { applications: ['x'] }),
      record('ladder', { applications: ['b', 'a'] }),
    ];
    expect(recordedApplications(earlier, 'ladder', 'c')).toEqual(['c', 'b', 'a']);
    expect(recordedApplications(earlier, 'ladder', 'a')).toEqual(['a', 'b']);
    expect(recordedApplications(earlier, 'ladder', undefined)).toEqual(['b', 'a']);
    expect(recordedApplications([undefined, record('q')], 'q', undefined)).toEqual([]);
    const many = [record('q', { applications: Array.from({ length: 16 }, (_, i) => `app-${i}`) })];
    expect(recordedApplications(many, 'q', 'new')).toEqual(['new', ...Array.from({ length: 15 }, (_, i) => `app-${i}`)]);
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

describe('isHeldElsewhere', () => {
  it('is true for the 405 RESOURCE_LOCKED that a second connection gets on an exclusive queue, false for anything else', () => {
    expect(
      isHeldElsewhere(
        Object.assign(
          new Error(
            'Channel closed by server: 405 (RESOURCE-LOCKED) with message "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue"',
          ),
          { code: 405 },
        ),
      ),
    ).toBe(true);
    expect(isHeldElsewhere(Object.assign(new Error('ACCESS_REFUSED'), { code: 403 }))).toBe(false);
    expect(isHeldElsewhere(Object.assign(new Error('NOT_FOUND'), { code: 404 }))).toBe(false);
    expect(isHeldElsewhere(undefined)).toBe(false);
    expect(isHeldElsewhere('RESOURCE_LOCKED')).toBe(false);
  });
});
