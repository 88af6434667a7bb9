import { otherSchedules, planRetirement, readPlanRecord, scheduleIdOf, screenPlanRecords, type RetryPlanRecord } from './retry-plan.record.js';

const schedule = (id: string, ...delays: string[]) => delays.map((d, i) => `q.retry.${i + 1}.${d}.${i === 0 ? id : `${id}${i}`}`);
const A = schedule('aaaaaa', '1s', '10s');
const B = schedule('bbbbbb', '2s', '20s');
const C = schedule('cccccc', '5s');
const record = (tiers: string[], others: string[][] = [], retiring: string[] = []): RetryPlanRecord => ({ tiers, others, retiring });

describe('readPlanRecord', () => {
  it('reads a record', () => {
    expect(readPlanRecord(Buffer.from(JSON.stringify(record(A, [B], ['x']))))).toEqual(record(A, [B], ['x']));
  });

  it('reads the older form without other schedules', () => {
    expect(readPlanRecord(Buffer.from('{"tiers":["q.retry.1.1s"],"retiring":["q.retry.1.2s"]}'))).toEqual(
      record(['q.retry.1.1s'], [], ['q.retry.1.2s']),
    );
  });

  it.each([[undefined], ['not json'], ['null'], ['[]'], ['{"tiers":"q"}'], ['{"tiers":[1]}']])('ignores %p', (content) => {
    expect(readPlanRecord(content === undefined ? undefined : Buffer.from(content))).toBeUndefined();
  });

  it('tolerates odd retiring and others lists', () => {
    expect(readPlanRecord(Buffer.from('{"tiers":["a"],"retiring":5,"others":[["b"],[],[1],"c"]}'))).toEqual(record(['a'], [['b']], []));
  });
});

describe('scheduleIdOf', () => {
  it("is the digest ending the first tier's name", () => {
    expect(scheduleIdOf(A)).toBe('aaaaaa');
    expect(scheduleIdOf([])).toBe('');
  });
});

describe('otherSchedules', () => {
  it('lists each schedule other than our own once', () => {
    expect(otherSchedules([record(B, [A, C]), record(C)], A)).toEqual([B, C]);
  });
});

describe('planRetirement', () => {
  it('retires nothing on a first start or an unchanged configuration', () => {
    expect(planRetirement([], A, new Set())).toEqual({ unbindFirst: [], keep: [], retire: [] });
    expect(planRetirement([record(A)], A, new Set())).toEqual({ unbindFirst: [], keep: [], retire: [] });
  });

  it('retires a schedule nobody runs any more, and takes first failures from it', () => {
    expect(planRetirement([record(A, [], ['q.retry.1.500ms.dddddd'])], B, new Set())).toEqual({
      unbindFirst: [A[0]],
      keep: [],
      retire: [...A, 'q.retry.1.500ms.dddddd'],
    });
  });

  it('keeps the tiers of a schedule another version still runs, but takes first failures', () => {
    expect(planRetirement([record(A, [C])], B, new Set(['aaaaaa']))).toEqual({ unbindFirst: [A[0], C[0]], keep: [A], retire: C });
  });

  it('never retires a tier of our own or of a kept schedule, even when listed as retiring', () => {
    expect(planRetirement([record(A, [], [B[1], A[0]])], B, new Set(['aaaaaa']))).toEqual({ unbindFirst: [A[0]], keep: [A], retire: [] });
  });
});

describe('screenPlanRecords', () => {
  const mine = ['orders.retry.1.1s.aaaaaa', 'orders.retry.2.10s.bbbbbb'];
  const theirs = ['orders.retry.1.2s.cccccc'];
  const reserved = ['orders.error', 'orders.dlx.dead'];

  it("keeps records that name only tiers of the queue, each schedule's tier k at position k", () => {
    const records = [record(mine, [theirs], ['orders.retry.3.1m.dddddd'])];
    expect(screenPlanRecords(records, 'orders', reserved)).toEqual({ records, ignored: 0, refused: [] });
  });

  it.each([
    ['another queue', record(mine, [], ['payments']), 'payments'],
    ["another queue's tier", record(mine, [], ['payments.retry.1.1s.aaaaaa']), 'payments.retry.1.1s.aaaaaa'],
    ['the queue itself', record(mine, [], ['orders']), 'orders'],
    ['its parking queue', record(mine, [], ['orders.error']), 'orders.error'],
    ['its dead-letter queue', record(['orders.dlx.dead']), 'orders.dlx.dead'],
    ['its plan queue', record(mine, [['orders.retry.plan']]), 'orders.retry.plan'],
    ['its plan lock', record(mine, [], ['orders.retry.plan.lock']), 'orders.retry.plan.lock'],
    ['a presence queue', record(mine, [], ['orders.retry.live.aaaaaa']), 'orders.retry.live.aaaaaa'],
    ['a tier out of its position', record([mine[1], mine[0]]), mine[1]],
    ['a name under the queue that is no tier', record(mine, [], ['orders.retry.1.1s.aaaaaa.x']), 'orders.retry.1.1s.aaaaaa.x'],
  ])('ignores a whole record naming %s, and reports the name', (_, bad, name) => {
    const good = record(theirs);
    const screened = screenPlanRecords([bad, good], 'orders', reserved);
    expect(screened.records).toEqual([good]);
    expect(screened.ignored).toBe(1);
    expect(screened.refused).toContain(name);
  });

  it('takes a parking queue named like a tier for no tier', () => {
    const odd = 'orders.retry.9.1s.eeeeee';
    expect(screenPlanRecords([record(mine, [], [odd])], 'orders', [odd]).refused).toEqual([odd]);
  });

  it('ignores a record without tiers (a start always records its first tier)', () => {
    expect(screenPlanRecords([record([])], 'orders', reserved)).toEqual({ records: [], ignored: 1, refused: [] });
  });
});
