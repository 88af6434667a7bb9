import { formatDuration, MAX_TTL_MS, parseDuration, readDurationWithin } from './duration.reader.js';

describe('parseDuration', () => {
  it.each([
    [0, 0],
    [1500, 1500],
    [0.2, 1],
    ['250ms', 250],
    ['5s', 5_000],
    [' 5 s ', 5_000],
    ['1.5m', 90_000],
    ['2h', 7_200_000],
    ['3d', 259_200_000],
    ['1.0001s', 1_001],
    ['42', 42],
  ])('reads %p as %p ms', (input, expected) => {
    expect(parseDuration(input)).toBe(expected);
  });

  it.each([[-1], [Number.NaN], [Number.POSITIVE_INFINITY], ['-5s'], ['5x'], ['s'], [''], ['1e3'], ['1,5s'], [null], [undefined], [{}], [true]])(
    'rejects %p',
    (input) => {
      expect(parseDuration(input)).toBeUndefined();
    },
  );
});

describe('formatDuration', () => {
  it.each([
    [250, '250ms'],
    [1_000, '1s'],
    [1_500, '1500ms'],
    [90_000, '90s'],
    [60_000, '1m'],
    [3_600_000, '1h'],
    [86_400_000, '1d'],
    [0, '0ms'],
  ])('writes %p ms as %p', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('round-trips through parseDuration', () => {
    for (const ms of [1, 999, 1_000, 61_000, 3_600_000, 90_061_000]) expect(parseDuration(formatDuration(ms))).toBe(ms);
  });
});

describe('readDurationWithin, the one duration reader', () => {
  it('answers the milliseconds within the range, bounds included', () => {
    expect(readDurationWithin('90s', 0, MAX_TTL_MS)).toEqual({ ok: true, ms: 90_000 });
    expect(readDurationWithin(0, 0, 10)).toEqual({ ok: true, ms: 0 });
    expect(readDurationWithin(MAX_TTL_MS, 0, MAX_TTL_MS)).toEqual({ ok: true, ms: MAX_TTL_MS });
    expect(readDurationWithin('1.5ms', 2, 10)).toEqual({ ok: true, ms: 2 });
  });

  it('says what is wrong otherwise', () => {
    expect(readDurationWithin('soon', 0, 10)).toEqual({ ok: false, problem: 'not-a-duration' });
    expect(readDurationWithin(-1, 0, 10)).toEqual({ ok: false, problem: 'not-a-duration' });
    expect(readDurationWithin(5, 10, 20)).toEqual({ ok: false, problem: 'below', ms: 5 });
    expect(readDurationWithin(MAX_TTL_MS + 1, 0, MAX_TTL_MS)).toEqual({ ok: false, problem: 'above', ms: MAX_TTL_MS + 1 });
  });
});
