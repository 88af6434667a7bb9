import { recordsDueForRefresh, recordsToCopy, REFRESH_RECORDS_AT } from './record-wear.decision.js';

const read = (headers?: Record<string, unknown>) => ({ properties: { headers } });

describe('recordsDueForRefresh', () => {
  it('leaves records handed out fewer times than the threshold, and those without counts (classic queues)', () => {
    expect(recordsDueForRefresh([])).toBe(false);
    expect(recordsDueForRefresh([read(), read({})])).toBe(false);
    expect(recordsDueForRefresh([read({ 'x-delivery-count': REFRESH_RECORDS_AT - 1 }), read({ 'x-acquired-count': REFRESH_RECORDS_AT - 1 })])).toBe(
      false,
    );
  });

  it('refreshes every record read once one of them reached the threshold, by either count', () => {
    expect(recordsDueForRefresh([read(), read({ 'x-delivery-count': REFRESH_RECORDS_AT })])).toBe(true);
    expect(recordsDueForRefresh([read({ 'x-acquired-count': REFRESH_RECORDS_AT + 5 }), read()])).toBe(true);
  });

  it('stays below the delivery limit RabbitMQ 4.x gives a quorum queue by default (20)', () => {
    expect(REFRESH_RECORDS_AT).toBeLessThan(20);
  });

  it('ignores counts that are not whole numbers', () => {
    expect(recordsDueForRefresh([read({ 'x-delivery-count': '50' }), read({ 'x-delivery-count': 12.5 })])).toBe(false);
  });
});

describe('recordsToCopy', () => {
  const bodies = (...texts: string[]) => texts.map((text) => Buffer.from(text));

  it('copies every record when each body is there once', () => {
    expect(recordsToCopy(bodies('a', 'b', 'c'))).toEqual([0, 1, 2]);
    expect(recordsToCopy([])).toEqual([]);
  });

  it('copies a body read twice once, at its last place, so the last record stays last', () => {
    // A refresh stopped after copying a and b: originals, then the copies.
    expect(recordsToCopy(bodies('a', 'b', 'c', 'a', 'b'))).toEqual([2, 3, 4]);
    expect(recordsToCopy(bodies('a', 'b', 'a'))).toEqual([1, 2]);
  });
});
