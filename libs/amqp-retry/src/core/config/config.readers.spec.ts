import { RetryConfigError } from '../../errors/retry-config.error.js';
import { POSITIVE_TIME_LIMIT_RANGE, readDuration, TIME_LIMIT_RANGE, TTL_RANGE } from './config.readers.js';

const KEY = 'RetryModule option "someTimeout"';

describe('readDuration, the one reader of configured durations', () => {
  it.each([
    ['30d', 30 * 86_400_000],
    ['49d', 49 * 86_400_000],
    [2 ** 31 - 1, 2 ** 31 - 1],
    [2 ** 31, 2 ** 31],
    [2 ** 32 - 1, 2 ** 32 - 1],
    ['0.5ms', 1],
  ])('takes %p as %p ms: any length up to 2^32-1 ms, rounded up', (value, ms) => {
    expect(readDuration(value, KEY, "'10s'", TIME_LIMIT_RANGE)).toBe(ms);
    expect(readDuration(value, KEY, "'10s'", TTL_RANGE)).toBe(ms);
  });

  it('names the key, the value and the fix, with one error type, whatever is wrong', () => {
    const cases: Array<[unknown, typeof TTL_RANGE, string]> = [
      ['soon', TIME_LIMIT_RANGE, `${KEY} has "soon", which is not a duration. Use milliseconds (1500)`],
      [-1, TIME_LIMIT_RANGE, `${KEY} has -1, which is not a duration.`],
      ['50d', TIME_LIMIT_RANGE, `${KEY} has "50d", longer than the longest time limit the library takes (about 49 days). Use at most 49d.`],
      [2 ** 32, TTL_RANGE, `${KEY} has 4294967296, longer than RabbitMQ's largest TTL (about 49 days). Use at most 49d.`],
      [0, POSITIVE_TIME_LIMIT_RANGE, `${KEY} is 0 ms: a time limit of 0 would fail everything at once. Use a time limit above 0, e.g. '10s'.`],
      ['5ms', { min: 1_000, max: 2_000, above: 'x' }, `${KEY} is 5 ms: the least it takes is 1s. Use at least 1s, e.g. '10s'.`],
    ];
    for (const [value, range, message] of cases) {
      expect(() => readDuration(value, KEY, "'10s'", range)).toThrow(RetryConfigError);
      expect(() => readDuration(value, KEY, "'10s'", range)).toThrow(message);
    }
  });
});
