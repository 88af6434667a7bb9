import { planAckFlush } from './ack.batch.js';

/** Deliveries of these tags, ready when their tag is in `ready`; the plan answered as tags. */
const plan = (tags: number[], ready: Iterable<number>) => {
  const handled = new Set(ready);
  const { multipleUpTo, singles, remaining } = planAckFlush(tags.map((tag) => ({ tag, ready: handled.has(tag) })));
  return { multipleUpTo: multipleUpTo?.tag, singles: singles.map((e) => e.tag), remaining: remaining.map((e) => e.tag) };
};

describe('planAckFlush', () => {
  it('acks a run of handled deliveries at the front with one multiple ack', () => {
    expect(plan([1, 2, 3, 4], [1, 2, 3, 4])).toEqual({ multipleUpTo: 4, singles: [], remaining: [] });
  });

  it('stops the run at a delivery still in flight and acks the handled ones behind it singly', () => {
    expect(plan([1, 2, 3, 4, 5], [1, 2, 4])).toEqual({ multipleUpTo: 2, singles: [4], remaining: [3, 5] });
  });

  it('acks a lone handled delivery at the front singly', () => {
    expect(plan([7, 8], [7])).toEqual({ multipleUpTo: undefined, singles: [7], remaining: [8] });
  });

  it('sends nothing when the front is still in flight', () => {
    expect(plan([3, 4], [4])).toEqual({ multipleUpTo: undefined, singles: [4], remaining: [3] });
    expect(plan([3, 4], [])).toEqual({ multipleUpTo: undefined, singles: [], remaining: [3, 4] });
  });

  it('works on gaps left by nacked deliveries (no longer outstanding)', () => {
    expect(plan([2, 5, 9], [2, 5, 9])).toEqual({ multipleUpTo: 9, singles: [], remaining: [] });
  });

  it('settles every ready delivery exactly once and keeps every other, for any mix', () => {
    for (let trial = 0; trial < 500; trial++) {
      const outstanding = Array.from({ length: 1 + (trial % 30) }, (_, i) => i * 2 + 1);
      const ready = new Set(outstanding.filter((_, i) => (i * 7 + trial) % 3 !== 0));
      const { multipleUpTo, singles, remaining } = plan(outstanding, ready);
      const covered = multipleUpTo === undefined ? [] : outstanding.filter((tag) => tag <= multipleUpTo);
      expect(covered.every((tag) => ready.has(tag))).toBe(true); // a multiple ack never covers one in flight
      expect([...covered, ...singles].sort((a, b) => a - b)).toEqual([...ready].sort((a, b) => a - b));
      expect(remaining).toEqual(outstanding.filter((tag) => !ready.has(tag)));
    }
  });
});
