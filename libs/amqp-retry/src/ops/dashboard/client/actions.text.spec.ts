import {
  editedReplayQuestion,
  exportedCount,
  exportFileName,
  failedText,
  filterQuestion,
  groupDoneText,
  groupQuestion,
  replayOneQuestion,
  reportText,
  selectionQuestion,
  workingText,
} from './actions.text.js';

describe("the page's questions and reports on actions", () => {
  it('reports how many of the matching were replayed or purged, and the first three left parked', () => {
    expect(reportText('Replayed', { matched: 4, replayed: 4 })).toEqual({ text: 'Replayed 4 of 4 matching.', kind: 'ok' });
    expect(reportText('Purged', { matched: 2 })).toEqual({ text: 'Purged 0 of 2 matching.', kind: 'ok' });
    const failed = ['a', 'b', 'c', 'd'].map((id) => ({ id, error: 'gone' }));
    expect(reportText('Replayed', { matched: 5, replayed: 1, failed })).toEqual({
      text: 'Replayed 1 of 5 matching. 4 left parked: a (gone); b (gone); c (gone)',
      kind: 'error',
    });
    expect([workingText('Purged'), workingText('Replayed')]).toEqual(['Purging…', 'Replaying…']);
    expect([failedText('Purged', '500 x'), failedText('Replayed', '500 x')]).toEqual(['Purge failed: 500 x', 'Replay failed: 500 x']);
  });

  it('asks before acting on one message, the selected ones, or all that match', () => {
    expect(replayOneQuestion({ queue: 'orders' })).toBe('Replay this message to orders with fresh attempts?');
    expect(replayOneQuestion({ queue: '' })).toBe('Replay this message to its queue with fresh attempts?');
    expect(editedReplayQuestion({ queue: 'orders' }, '{"a":1}')).toBe('Replay this message to orders with the corrected body (7 characters)?');
    expect(selectionQuestion('Replayed', 1)).toBe('Replay 1 selected message with fresh attempts?');
    expect(selectionQuestion('Purged', 3)).toBe('Purge 3 selected messages? They are deleted for good.');
    const q = { queue: 'orders', errorQueue: 'orders.error' };
    expect(filterQuestion('Replayed', 12, q, { queue: 'orders' })).toBe('Replay all 12 messages parked in orders.error to orders?');
    expect(filterQuestion('Purged', 1, q, { queue: 'orders', reason: 'rejected' })).toBe(
      'Purge all 1 message parked in orders.error that match the filter? They are deleted for good.',
    );
  });

  it('asks before acting on a failure group and reports what was done', () => {
    const group = { count: 3, error: 'boom', queue: '' };
    expect(groupQuestion('replay', group)).toBe('Replay the 3 messages of "boom" to their queue? Each returns once.');
    expect(groupQuestion('purge', { ...group, queue: 'orders' })).toBe('Purge the 3 messages of "boom"? They are deleted for good.');
    expect(groupQuestion('purge', group, true)).toBe(
      'Purge the 3 messages of "boom" that match the filter (the group\'s others stay parked)? They are deleted for good.',
    );
    expect(groupQuestion('replay', { ...group, count: 1, queue: 'orders' }, true)).toBe(
      'Replay the 1 message of "boom" that match the filter (the group\'s others stay parked) to orders? Each returns once.',
    );
    expect(groupDoneText('replay', { done: 3, matched: 3, failed: 0 })).toBe('Replayed 3 of 3 of the group.');
    expect(groupDoneText('purge', { done: 1, matched: 3, failed: 2 })).toBe('Purged 1 of 3 of the group; 2 left parked.');
  });

  it('names an export after its parking queue and counts its lines', () => {
    expect(exportFileName('shop/orders error')).toBe('shop_orders_error.jsonl');
    expect(exportFileName('orders.error')).toBe('orders.error.jsonl');
    expect(exportedCount('{"a":1}\n{"b":2}\n')).toBe(2);
    expect(exportedCount('')).toBe(0);
  });
});
