import { planTierRetirement, readPlanRecord } from './retry-plan.record.js';

describe('readPlanRecord', () => {
  it('reads a record', () => {
    expect(readPlanRecord(Buffer.from('{"tiers":["q.retry.1.1s"],"retiring":["q.retry.1.2s"]}'))).toEqual({
      tiers: ['q.retry.1.1s'],
      retiring: ['q.retry.1.2s'],
    });
  });

  it.each([[undefined], ['not json'], ['null'], ['[]'], ['{"tiers":"q"}'], ['{"tiers":[1]}']])('ignores %p', (content) => {
    expect(readPlanRecord(content === undefined ? undefined : Buffer.from(content))).toBeUndefined();
  });

  it('tolerates a missing or odd retiring list', () => {
    expect(readPlanRecord(Buffer.from('{"tiers":["a"],"retiring":5}'))).toEqual({ tiers: ['a'], retiring: [] });
  });
});

describe('planTierRetirement', () => {
  it('retires nothing on a first start or an unchanged configuration', () => {
    expect(planTierRetirement(undefined, ['a', 'b'])).toEqual([]);
    expect(planTierRetirement({ tiers: ['a', 'b'], retiring: [] }, ['a', 'b'])).toEqual([]);
  });

  it('retires the tiers the new configuration does not use, and those still draining from before', () => {
    expect(
      planTierRetirement({ tiers: ['q.retry.1.1s', 'q.retry.2.10s'], retiring: ['q.retry.1.500ms'] }, ['q.retry.1.2s', 'q.retry.2.10s']),
    ).toEqual(['q.retry.1.1s', 'q.retry.1.500ms']);
  });

  it('never retires a tier the new configuration uses again, and lists each once', () => {
    expect(planTierRetirement({ tiers: ['a', 'b', 'a'], retiring: ['c', 'b'] }, ['c'])).toEqual(['a', 'b']);
  });
});
