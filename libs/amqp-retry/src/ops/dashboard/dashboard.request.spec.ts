import {
  DashboardRequestError,
  exportFileName,
  MAX_IDS,
  readEdit,
  readExportQuery,
  readFilter,
  readGroupSelection,
  readOperation,
  readPage,
  readSelection,
} from './dashboard.request.js';

describe('readFilter', () => {
  it('reads every field of a query and leaves out the empty ones', () => {
    expect(
      readFilter({ queue: 'orders', reason: 'exhausted', error: 'timeout', text: 'sku', since: '2026-11-23T10:00:00.000Z', until: '' }, 'query'),
    ).toEqual({
      queue: 'orders',
      reason: 'exhausted',
      error: 'timeout',
      text: 'sku',
      since: new Date('2026-11-23T10:00:00.000Z'),
    });
    expect(readFilter(undefined)).toEqual({});
  });

  it('names the field at fault', () => {
    expect(() => readFilter({ since: 'yesterday' }, 'query')).toThrow(new DashboardRequestError('since', 'is not a date: "yesterday"'));
    expect(() => readFilter({ reason: ['a', 'b'] })).toThrow(new DashboardRequestError('filter.reason', 'must be a string'));
    expect(() => readFilter({ text: 'x'.repeat(1001) })).toThrow(/filter\.text is longer than 1000/);
    expect(() => readFilter('all')).toThrow(/filter must be a JSON object/);
  });
});

describe('readPage', () => {
  it('defaults to the first 50 and caps the size', () => {
    expect(readPage({})).toEqual({ offset: 0, limit: 50, bodyPreviewBytes: 16 * 1024 });
    expect(readPage({ offset: '100', limit: '20' })).toEqual({ offset: 100, limit: 20, bodyPreviewBytes: 16 * 1024 });
    expect(() => readPage({ limit: '500' })).toThrow(/limit must be a whole number from 0 to 200/);
    expect(() => readPage({ offset: '-1' })).toThrow(/offset/);
    expect(() => readPage({ offset: '1e3' })).toThrow(/offset/);
  });
});

describe('readSelection', () => {
  it('reads ids (each once) and a filter', () => {
    expect(readSelection({ errorQueue: 'orders.error', ids: ['a', 'b', 'a'] })).toEqual({ errorQueue: 'orders.error', ids: ['a', 'b'] });
    expect(readSelection({ errorQueue: 'orders.error', filter: { reason: 'malformed' } })).toEqual({
      errorQueue: 'orders.error',
      filter: { reason: 'malformed' },
    });
  });

  it('refuses a selection naming neither ids nor a filter: no whole-queue action by omission', () => {
    expect(() => readSelection({ errorQueue: 'orders.error' })).toThrow(/names neither ids nor a filter/);
    expect(readSelection({ errorQueue: 'orders.error', filter: {} })).toEqual({ errorQueue: 'orders.error', filter: {} });
  });

  it('refuses malformed ids and queue names', () => {
    expect(() => readSelection({ ids: ['a'] })).toThrow(/errorQueue is required/);
    expect(() => readSelection({ errorQueue: 'q', ids: [] })).toThrow(/ids must be a non-empty array/);
    expect(() => readSelection({ errorQueue: 'q', ids: [1] })).toThrow(/ids must be a non-empty array/);
    expect(() => readSelection({ errorQueue: 'q', ids: Array.from({ length: MAX_IDS + 1 }, (_, i) => `id${i}`) })).toThrow(/more than 1000 ids/);
    expect(() => readSelection(null)).toThrow(/body must be a JSON object/);
  });
});

describe('readGroupSelection', () => {
  it('selects the whole group without a filter, and the group narrowed by the filter given', () => {
    expect(readGroupSelection({ errorQueue: 'orders.error', group: 'g1', by: 'ops', expected: 3 })).toEqual({
      errorQueue: 'orders.error',
      filter: { group: 'g1' },
    });
    expect(
      readGroupSelection({ errorQueue: 'orders.error', group: 'g1', filter: { queue: 'orders', text: 'eu', since: '2026-11-30T10:00:00.000Z' } }),
    ).toEqual({ errorQueue: 'orders.error', filter: { queue: 'orders', text: 'eu', since: new Date('2026-11-30T10:00:00.000Z'), group: 'g1' } });
  });

  it('refuses a missing group, a group inside the filter, and unknown fields, naming them', () => {
    expect(() => readGroupSelection({ errorQueue: 'orders.error' })).toThrow(/group is missing/);
    expect(() => readGroupSelection({ errorQueue: 'orders.error', group: 'g1', filter: { group: 'g2' } })).toThrow(
      /filter.group is not for a group action/,
    );
    expect(() => readGroupSelection({ errorQueue: 'orders.error', group: 'g1', filter: { txt: 'eu' } })).toThrow(
      /filter has unknown field\(s\) "txt"/,
    );
    expect(() => readGroupSelection({ errorQueue: 'orders.error', group: 'g1', ids: ['a'] })).toThrow(/body has unknown field\(s\) "ids"/);
    expect(() => readGroupSelection({ group: 'g1' })).toThrow(/errorQueue is required/);
  });
});

describe('readOperation and unknown fields', () => {
  it('reads dryRun and expected, and names a dryRun that is not a boolean', () => {
    expect(readOperation({ errorQueue: 'q', filter: {}, dryRun: true, expected: 12 })).toEqual({ dryRun: true, expected: 12 });
    expect(readOperation({ errorQueue: 'q', filter: {} })).toEqual({});
    expect(() => readOperation({ dryRun: 'yes' })).toThrow(new DashboardRequestError('dryRun', 'must be true or false'));
    expect(() => readOperation({ expected: -1 })).toThrow(/expected must be a whole number/);
  });

  it('refuses fields of a body that mean nothing, naming them: a misspelt one must not widen a change', () => {
    expect(() => readSelection({ errorQueue: 'q', filter: {}, dryrun: true, force: 1 })).toThrow(
      new DashboardRequestError('body', 'has unknown field(s) "dryrun", "force"; known: errorQueue, ids, filter, expected, dryRun'),
    );
    expect(() => readSelection({ errorQueue: 'q', filter: { reson: 'malformed' } })).toThrow(/^filter has unknown field\(s\) "reson"/);
    expect(() => readEdit({ errorQueue: 'q', id: 'i', body: '', dry: true })).toThrow(/^body has unknown field\(s\) "dry"/);
    expect(readFilter({ queue: 'orders', offset: '5' }, 'query')).toEqual({ queue: 'orders' }); // a query string is read leniently
  });
});

describe('readEdit', () => {
  it('reads the corrected body, keeping an empty one', () => {
    expect(readEdit({ errorQueue: 'q.error', id: 'i', body: '' })).toEqual({ errorQueue: 'q.error', id: 'i', body: '' });
    expect(readEdit({ errorQueue: 'q.error', id: 'i', body: '{}', contentType: 'application/json' })).toEqual({
      errorQueue: 'q.error',
      id: 'i',
      body: '{}',
      contentType: 'application/json',
    });
  });

  it('refuses a body that is not a string', () => {
    expect(() => readEdit({ errorQueue: 'q.error', id: 'i', body: { a: 1 } })).toThrow(/body\.body must be a string/);
  });
});

describe('readExportQuery', () => {
  it('needs the parking queue and reads the filter beside it', () => {
    expect(readExportQuery({ errorQueue: 'q.error', reason: 'malformed' })).toEqual({ errorQueue: 'q.error', filter: { reason: 'malformed' } });
    expect(() => readExportQuery({ reason: 'malformed' })).toThrow(/errorQueue is required/);
  });

  it('names the file after the queue, with nothing a header or a file system would misread', () => {
    expect(exportFileName('orders.error')).toBe('orders.error.jsonl');
    expect(exportFileName('a"b\r\n/../c')).toBe('a_b___.._c.jsonl');
  });
});
