import { consumerPrefetch, paceAfterDelivery } from './suspect.pace.js';

describe('poison isolation: the pace after a delivery', () => {
  it.each([
    // suspect, careful now, delivered carefully -> careful after (undefined: no change)
    [true, false, false, true],
    [true, false, true, true],
    [true, true, true, undefined],
    [true, true, false, undefined],
    [false, true, true, false],
    [false, true, false, undefined],
    [false, false, false, undefined],
    [false, false, true, undefined],
  ])('suspect %s, careful %s, delivered carefully %s: %s', (suspect, careful, carefully, expected) => {
    expect(paceAfterDelivery(suspect, careful, carefully)).toBe(expected);
  });

  it('subscribes at 1 while careful, else at the pace of release(), else at the configured prefetch', () => {
    expect(consumerPrefetch(true, 5, 20)).toBe(1);
    expect(consumerPrefetch(false, 5, 20)).toBe(5);
    expect(consumerPrefetch(false, undefined, 20)).toBe(20);
  });
});
