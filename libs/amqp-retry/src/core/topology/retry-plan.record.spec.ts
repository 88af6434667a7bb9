import { otherSchedules, planRetirement, readPlanRecord, scheduleIdOf, type RetryPlanRecord } from './retry-plan.record.js';

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
