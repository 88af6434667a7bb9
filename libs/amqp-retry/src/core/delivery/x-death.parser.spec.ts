import { firstRejection, MAX_DEATH_ENTRIES, readDeathHistory, rejectedCount } from './x-death.parser.js';

const entry = (over: Record<string, unknown> = {}) => ({
  queue: 'orders',
  reason: 'rejected',
  count: 2,
  exchange: 'shop',
  'routing-keys': ['order.created'],
  time: { '!': 'timestamp', value: 1_700_000_000 },
  ...over,
});

/** The entries of a well-formed history (as the broker writes it). */
const deathsOf = (header: unknown[]) => {
  const history = readDeathHistory(header);
  if (!history.ok) throw new Error(history.problem);
  return history.deaths;
};

describe('rejectedCount', () => {
  it('counts only the {queue, rejected} entry, wherever it stands', () => {
    const deaths = deathsOf([
      entry({ queue: 'orders.retry.1', reason: 'expired', count: 9 }),
      entry({ queue: 'billing', count: 7 }),
      entry({ count: 4 }),
    ]);
    expect(rejectedCount(deaths, 'orders')).toBe(4);
    expect(rejectedCount(deaths, 'billing')).toBe(7);
    expect(rejectedCount(deaths, 'shipping')).toBe(0);
  });

  it('takes the larger count of a duplicated entry instead of adding them', () => {
    expect(rejectedCount(deathsOf([entry({ count: 2 }), entry({ count: 3 })]), 'orders')).toBe(3);
  });

  it('is 0 without deaths', () => {
    expect(rejectedCount([], 'orders')).toBe(0);
  });
});

describe('firstRejection', () => {
  it('finds the entry of the queue, not the first in the array', () => {
    const deaths = deathsOf([entry({ queue: 'orders.retry.1', reason: 'expired', exchange: 'orders.dlx' }), entry()]);
    expect(firstRejection(deaths, 'orders')?.exchange).toBe('shop');
  });
});

describe('readDeathHistory', () => {
  const problem = (header: unknown) => {
    const history = readDeathHistory(header);
    return history.ok ? undefined : history.problem;
  };

  it('reads a broker-shaped header in full', () => {
    expect(readDeathHistory([entry(), entry({ queue: 'orders.retry.1', reason: 'expired', count: 1, exchange: '' })])).toEqual({
      ok: true,
      deaths: [
        { queue: 'orders', reason: 'rejected', count: 2, exchange: 'shop', routingKeys: ['order.created'], time: new Date(1_700_000_000_000) },
        { queue: 'orders.retry.1', reason: 'expired', count: 1, exchange: '', routingKeys: ['order.created'], time: new Date(1_700_000_000_000) },
      ],
    });
  });

  it('reads an absent header as no deaths, and an empty array too', () => {
    expect(readDeathHistory(undefined)).toEqual({ ok: true, deaths: [] });
    expect(readDeathHistory([])).toEqual({ ok: true, deaths: [] });
  });

  it('leaves out optional fields that are absent and ignores fields it does not know', () => {
    const minimal = { queue: 'orders', reason: 'rejected', count: 1, future: { x: 1 } };
    expect(readDeathHistory([minimal])).toEqual({
      ok: true,
      deaths: [{ queue: 'orders', reason: 'rejected', count: 1, exchange: undefined, routingKeys: [], time: undefined }],
    });
  });

  it('keeps original-expiration as text (a string or bytes), and ignores it when it is anything else', () => {
    const death = (value: unknown) => {
      const history = readDeathHistory([{ queue: 'orders', reason: 'rejected', count: 1, 'original-expiration': value }]);
      return history.ok ? history.deaths[0].originalExpiration : history.problem;
    };
    expect(death('60000')).toBe('60000');
    expect(death(Buffer.from('60000'))).toBe('60000');
    expect(death(60000)).toBeUndefined();
    expect(death({ x: 1 })).toBeUndefined();
  });

  it('accepts a null-prototype table', () => {
    expect(readDeathHistory([Object.assign(Object.create(null), entry())]).ok).toBe(true);
  });

  it.each([
    [{ '!': 'long', value: 5 }, 5],
    [{ '!': 'signedint', value: 7 }, 7],
    [{ '!': 'int64', value: 1 }, 1],
    [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  ])('accepts count %p', (count, expected) => {
    const history = readDeathHistory([entry({ count })]);
    expect(history.ok && history.deaths[0].count).toBe(expected);
  });

  it.each<[string, unknown, string]>([
    ['null', null, 'x-death is null, not an array of tables'],
    ['a string', 'x-death', 'x-death is a string, not an array of tables'],
    ['a number', 42, 'x-death is a number, not an array of tables'],
    ['a lone table', entry(), 'x-death is a table, not an array of tables'],
    ['a Buffer', Buffer.from('[]'), 'x-death is a byte array, not an array of tables'],
    ['a Map', new Map(), 'x-death is an object that is not a table, not an array of tables'],
    ['a string element', [entry(), entry(), 'text'], 'x-death[2] is a string, not a table'],
    ['a null element', [null], 'x-death[0] is null, not a table'],
    ['a nested array', [[entry()]], 'x-death[0] is an array, not a table'],
    ['a Buffer element', [Buffer.from('x')], 'x-death[0] is a byte array, not a table'],
    ['a Date element', [new Date(0)], 'x-death[0] is a Date, not a table'],
    ['a class instance', [new (class Death {})()], 'x-death[0] is an object that is not a table, not a table'],
    ['a typed value element', [{ '!': 'timestamp', value: 1 }], 'x-death[0] is a timestamp, not a table'],
    ['a hole', new Array(1), 'x-death[0] is missing, not a table'],
    ['no queue', [entry({ queue: undefined })], 'x-death[0] has no queue'],
    ['a numeric queue', [entry({ queue: 7 })], 'x-death[0].queue is 7, not a string'],
    ['a byte-array reason', [entry({ reason: Buffer.from('rejected') })], 'x-death[0].reason is a byte array, not a string'],
    ['no count', [entry({ count: undefined })], 'x-death[0] has no count'],
    ['a negative count', [entry({ count: -3 })], 'x-death[0].count is -3, not a whole number from 1'],
    ['a zero count', [entry({ count: 0 })], 'x-death[0].count is 0, not a whole number from 1'],
    ['a fraction', [entry({ count: 1.5 })], 'x-death[0].count is 1.5, not a whole number from 1'],
    ['NaN', [entry({ count: Number.NaN })], 'x-death[0].count is NaN, not a whole number from 1'],
    ['Infinity', [entry({ count: Number.POSITIVE_INFINITY })], 'x-death[0].count is Infinity, not a whole number from 1'],
    ['an unsafe count', [entry({ count: 2 ** 53 })], 'x-death[0].count is 9007199254740992, not a whole number from 1'],
    ['a numeric string', [entry({ count: '5' })], 'x-death[0].count is "5", not a whole number from 1'],
    ['a bigint', [entry({ count: BigInt(5) })], 'x-death[0].count is a bigint (5), not a whole number from 1'],
    ['a boolean count', [entry({ count: true })], 'x-death[0].count is true, not a whole number from 1'],
    ['a wrapped negative', [entry({ count: { '!': 'long', value: -3 } })], 'x-death[0].count is -3, not a whole number from 1'],
    ['a wrapped string', [entry({ count: { '!': 'long', value: '5' } })], 'x-death[0].count is "5", not a whole number from 1'],
    ['a wrapped float', [entry({ count: { '!': 'double', value: 5 } })], 'x-death[0].count is a double, not a whole number from 1'],
    ['a timestamp count', [entry({ count: { '!': 'timestamp', value: 5 } })], 'x-death[0].count is a timestamp, not a whole number from 1'],
    ['a table count', [entry({ count: { value: 5 } })], 'x-death[0].count is a table, not a whole number from 1'],
    ['a null exchange', [entry({ exchange: null })], 'x-death[0].exchange is null, not a string'],
    ['a string of keys', [entry({ 'routing-keys': 'a.b' })], 'x-death[0].routing-keys is "a.b", not an array of strings'],
    ['a bad key', [entry({ 'routing-keys': ['a', 3] })], 'x-death[0].routing-keys[1] is 3, not a string'],
    ['a plain-number time', [entry({ time: 1_700_000_000 })], 'x-death[0].time is 1700000000, not a timestamp'],
    ['a string time', [entry({ time: 'yesterday' })], 'x-death[0].time is "yesterday", not a timestamp'],
    ['a negative timestamp', [entry({ time: { '!': 'timestamp', value: -1 } })], 'x-death[0].time is a timestamp, not a timestamp'],
    ['a timestamp past Date', [entry({ time: { '!': 'timestamp', value: 1e16 } })], 'x-death[0].time is a timestamp, not a timestamp'],
    ['a second entry', [entry(), entry({ count: -1 })], 'x-death[1].count is -1, not a whole number from 1'],
  ])('refuses %s, naming the problem', (_, header, expected) => {
    expect(readDeathHistory(header)).toEqual({ ok: false, problem: expected });
  });

  it('cuts a long string in a problem', () => {
    expect(problem([entry({ count: 'y'.repeat(1000) })])).toBe(`x-death[0].count is "${'y'.repeat(40)}...", not a whole number from 1`);
  });

  it(`refuses more than ${MAX_DEATH_ENTRIES} entries without reading them`, () => {
    expect(readDeathHistory(Array.from({ length: MAX_DEATH_ENTRIES }, () => entry())).ok).toBe(true);
    expect(problem(Array.from({ length: MAX_DEATH_ENTRIES + 1 }, () => 'not read'))).toBe(
      `x-death has ${MAX_DEATH_ENTRIES + 1} entries, more than the ${MAX_DEATH_ENTRIES} a broker could have written`,
    );
  });

  it('never throws, even on values that throw when read', () => {
    const trap = () => {
      throw new Error('trap');
    };
    const hostile = new Proxy([], { get: trap, getPrototypeOf: trap, has: trap, ownKeys: trap });
    const getter = Object.defineProperty({ reason: 'rejected', count: 1 }, 'queue', { get: trap, enumerable: true });
    expect(readDeathHistory(hostile)).toEqual({ ok: false, problem: 'x-death could not be read: reading it threw' });
    expect(readDeathHistory([getter])).toEqual({ ok: false, problem: 'x-death could not be read: reading it threw' });
  });
});
