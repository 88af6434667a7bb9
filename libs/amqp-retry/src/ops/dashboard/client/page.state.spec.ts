import type { QueueState } from './api.types.js';
import {
  busiestQueue,
  createState,
  distinctMessages,
  filterForApi,
  filterFromFields,
  groupActionBody,
  lastPageOffset,
  listedDepths,
  listSummary,
  pageInfo,
  refreshedText,
  selectedQueue,
  selectionByQueue,
  selectionKey,
} from './page.state.js';

const queue = (name: string, parked: number, role?: 'delay-ladder'): QueueState =>
  ({ queue: name, errorQueue: `${name}.error`, parked, role }) as unknown as QueueState;

describe("the page's state", () => {
  it('opens on the handler queue with the most parked messages, and on none when nothing is parked', () => {
    const queues = [queue('orders', 3), queue('ladder', 99, 'delay-ladder'), queue('payments', 7), queue('mail', 0)];
    expect(busiestQueue(queues)?.queue).toBe('payments');
    expect(busiestQueue([queue('orders', 0), queue('ladder', 4, 'delay-ladder')])).toBeUndefined();
  });

  it('finds the chosen queue among those it knows', () => {
    const queues = [queue('orders', 1), queue('payments', 2)];
    expect(selectedQueue({ queues, filter: { queue: 'payments' } })?.errorQueue).toBe('payments.error');
    expect(selectedQueue({ queues, filter: {} })).toBeUndefined();
    expect(selectedQueue({ queues, filter: { queue: 'gone' } })).toBeUndefined();
  });

  it("gives the API the filter's filled fields only", () => {
    expect(filterForApi({ queue: 'orders', reason: '', error: 'boom', text: undefined, since: '2026-01-01T00:00:00.000Z' })).toEqual({
      queue: 'orders',
      error: 'boom',
      since: '2026-01-01T00:00:00.000Z',
    });
    expect(filterForApi({})).toEqual({});
  });

  it('reads the list again when a parked depth it shows changes: those of the chosen queue, or of every queue', () => {
    const queues = [queue('orders', 1), queue('payments', 2)];
    expect(listedDepths({ queues, filter: {} })).toBe('orders.error:1,payments.error:2');
    expect(listedDepths({ queues, filter: { queue: 'payments' } })).toBe('payments.error:2');
  });

  it('keys a selection by parking queue and id, and groups the selected ids by parking queue', () => {
    const keys = [
      selectionKey({ errorQueue: 'a.error', id: '1' }),
      selectionKey({ errorQueue: 'b.error', id: '2' }),
      selectionKey({ errorQueue: 'a.error', id: '3' }),
    ];
    expect(selectionByQueue(keys)).toEqual(
      new Map([
        ['a.error', ['1', '3']],
        ['b.error', ['2']],
      ]),
    );
    expect(selectionByQueue(createState().selected).size).toBe(0);
  });

  it('lists a message found twice (by id and by correlation id) once', () => {
    const found = [
      { errorQueue: 'a.error', id: '1' },
      { errorQueue: 'b.error', id: '1' },
      { errorQueue: 'a.error', id: '1' },
    ];
    expect(distinctMessages(found)).toEqual(found.slice(0, 2));
  });

  it('says which messages the list shows, its page, and the last page that still has some', () => {
    expect(listSummary(0, 0, 0)).toBe('No parked message matches.');
    expect(listSummary(120, 50, 50)).toBe('Showing 51–100 of 120 matching.');
    expect(pageInfo(120, 50)).toBe('Page 2 of 3');
    expect(pageInfo(50, 0)).toBe('');
    expect([lastPageOffset(120), lastPageOffset(100), lastPageOffset(1)]).toEqual([100, 50, 0]);
  });

  it("reads the form's fields as a filter: trimmed reason and error, times as ISO, empty fields left out", () => {
    const fields: Record<string, string> = {
      errorQueue: 'orders',
      reason: ' rejected ',
      error: '  ',
      text: ' a b ',
      since: '2026-03-01T10:30',
      until: '',
    };
    expect(filterFromFields((name) => fields[name])).toEqual({
      queue: 'orders',
      reason: 'rejected',
      error: undefined,
      text: ' a b ',
      since: new Date('2026-03-01T10:30').toISOString(),
      until: undefined,
    });
  });

  it('says on the refresh line whether auto-refresh is on', () => {
    expect(refreshedText(true, '12:00:00')).toBe('Refreshes every 5 s · read 12:00:00');
    expect(refreshedText(false, '12:00:00')).toBe('Auto-refresh paused · read 12:00:00');
  });
});

describe('groupActionBody', () => {
  const group = { errorQueue: 'orders.error', key: 'g1', count: 6 };

  it('confirms the count shown, and takes the whole group when no queue, text or time filter counted it', () => {
    expect(groupActionBody(group, {})).toEqual({ errorQueue: 'orders.error', group: 'g1', expected: 6 });
    // The groups are counted without the reason and error chosen: those do not narrow the action either.
    expect(groupActionBody(group, { reason: 'exhausted', error: 'refused' })).toEqual({ errorQueue: 'orders.error', group: 'g1', expected: 6 });
  });

  it('narrows the action by the filter the count was read under, and confirms that count', () => {
    for (const filter of [{ queue: 'orders' }, { text: 'eu' }, { since: '2026-11-30T10:00:00.000Z' }, { until: '2026-11-30T11:00:00.000Z' }]) {
      expect(groupActionBody(group, filter)).toEqual({ errorQueue: 'orders.error', group: 'g1', expected: 6, filter });
    }
    expect(groupActionBody(group, { queue: 'orders', reason: 'exhausted', text: 'eu', error: '' })).toEqual({
      errorQueue: 'orders.error',
      group: 'g1',
      expected: 6,
      filter: { queue: 'orders', text: 'eu' },
    });
  });
});
