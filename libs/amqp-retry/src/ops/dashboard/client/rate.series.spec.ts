import { addReading, averageRate, ratesPerMinute, sparkPoints, WINDOW_MS, type Reading } from './rate.series.js';

const at = (seconds: number, handled: number, retried = 0, parked = 0): Reading => ({ at: seconds * 1000, counts: { handled, retried, parked } });

describe('the rate series', () => {
  it('keeps the readings of the last ten minutes, newest last, and drops one that goes back in time', () => {
    let readings: Reading[] = [];
    for (const reading of [at(0, 0), at(300, 5), at(600, 10), at(601, 11)]) readings = addReading(readings, reading);
    expect(readings.map((r) => r.at / 1000)).toEqual([300, 600, 601]); // 0 s is more than WINDOW_MS before 601 s
    expect(addReading(readings, at(500, 99))).toEqual(readings);
    expect(WINDOW_MS).toBe(600_000);
  });

  it('gives per-minute rates between readings, outcome by outcome', () => {
    expect(ratesPerMinute([at(0, 0, 0, 0), at(30, 10, 2, 1), at(90, 10, 5, 1)])).toEqual([
      { from: 0, at: 30_000, handled: 20, retried: 4, parked: 2 },
      { from: 30_000, at: 90_000, handled: 0, retried: 3, parked: 0 },
    ]);
    expect(ratesPerMinute([at(0, 5)])).toEqual([]);
  });

  it('never gives a negative rate when the application restarted and its counts began again', () => {
    const [point] = ratesPerMinute([at(0, 500), at(60, 7)]);
    expect(point.handled).toBe(7);
  });

  it('averages over the whole series, restarts included, and is undefined before two readings', () => {
    expect(averageRate([at(0, 0), at(60, 30), at(120, 30)], 'handled')).toBe(15);
    expect(averageRate([at(0, 100), at(60, 20)], 'handled')).toBe(20);
    expect(averageRate([at(0, 1)], 'handled')).toBeUndefined();
  });

  it('draws each interval as a step in its box, across the time the readings span: newest at the right edge, the highest rate at the top, zeros on the bottom', () => {
    const points = [
      { from: 0, at: 300_000, value: 10 },
      { from: 300_000, at: 600_000, value: 5 },
    ];
    expect(sparkPoints(points, 100, 20)).toBe('0,0 50,0 50,10 100,10');
    expect(sparkPoints([{ from: 540_000, at: 600_000, value: 0 }], 100, 20)).toBe('0,20 100,20'); // one interval spans the box
    // Readings over more than the window: the oldest interval runs off the left edge.
    expect(
      sparkPoints(
        [
          { from: 0, at: 600_000, value: 1 },
          { from: 600_000, at: 1_200_000, value: 1 },
        ],
        100,
        20,
      ),
    ).toBe('0,0 0,0 0,0 100,0');
    expect(sparkPoints([], 100, 20)).toBe('');
  });
});
