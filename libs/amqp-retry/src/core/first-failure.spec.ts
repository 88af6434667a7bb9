import { FIRST_FAILURE_HEADER, firstFailureHeaders, movedFirstFailures, movedFrom } from './first-failure.js';

const from = { exchange: 'shop', routingKey: 'order.created' };

describe('first failures moved into a schedule of their own', () => {
  it('counts the moved failure only on the queue the header names', () => {
    const headers = firstFailureHeaders({ a: 1 }, 'orders', from);
    expect(headers).toMatchObject({ a: 1, [FIRST_FAILURE_HEADER]: 'orders' });
    expect(movedFrom(headers, 'orders')).toEqual(from);
    expect(movedFrom(headers, 'payments')).toBeUndefined();
    expect(movedFirstFailures(headers, 'orders')).toBe(1);
    expect(movedFirstFailures(headers, 'payments')).toBe(0);
  });

  it('counts nothing without the header, or with a value that is not the queue name', () => {
    expect(movedFirstFailures(undefined, 'orders')).toBe(0);
    expect(movedFirstFailures({}, 'orders')).toBe(0);
    expect(movedFirstFailures({ [FIRST_FAILURE_HEADER]: 1 }, 'orders')).toBe(0);
    expect(movedFirstFailures({ [FIRST_FAILURE_HEADER]: ['orders'] }, 'orders')).toBe(0);
  });

  it('does not change the headers it copies', () => {
    const original = { [FIRST_FAILURE_HEADER]: 'other', b: 2 };
    expect(firstFailureHeaders(original, 'orders', from)[FIRST_FAILURE_HEADER]).toBe('orders');
    expect(original[FIRST_FAILURE_HEADER]).toBe('other');
  });
});
