import { mayDeclarePartition, RetiredPartitionWatch } from './retired-partition.watch.js';

describe('RetiredPartitionWatch', () => {
  const self = { id: 'a', count: 4 };
  const larger = { id: 'b', count: 8 };

  it('tells whether a member heard may declare a partition: one whose count is above it, or one that did not say', () => {
    expect(mayDeclarePartition(5, [self])).toBe(false);
    expect(mayDeclarePartition(5, [self, larger])).toBe(true);
    expect(mayDeclarePartition(8, [self, larger])).toBe(false);
    expect(mayDeclarePartition(5, [self, { id: 'old' }])).toBe(true);
  });

  it('looks for a deleted retired partition while an instance that runs it is heard, every everyMs at most', () => {
    const watch = new RetiredPartitionWatch(5_000, 16);
    watch.lost(5);
    expect(watch.heard([self, larger], 0)).toEqual([5]);
    expect(watch.heard([self, larger], 1_000)).toEqual([]);
    expect(watch.heard([self, larger], 4_999)).toEqual([]);
    expect(watch.heard([self, larger], 5_000)).toEqual([5]);
  });

  it('does not look while nobody heard runs it: no passive check fails on the broker for nothing', () => {
    const watch = new RetiredPartitionWatch(5_000, 16);
    watch.lost(5);
    for (let at = 0; at < 60_000; at += 1_000) expect(watch.heard([self, { id: 'c', count: 4 }], at)).toEqual([]);
  });

  it('looks once more after the last instance that runs it is gone: it may have declared it just before it left', () => {
    const watch = new RetiredPartitionWatch(5_000, 16);
    watch.lost(5);
    expect(watch.heard([self, larger], 0)).toEqual([5]);
    watch.heard([self, larger], 3_000); // heard at a heartbeat after the look, gone at the next
    expect(watch.heard([self], 5_000)).toEqual([5]);
    expect(watch.heard([self], 10_000)).toEqual([]);
  });

  it('stops looking for a partition found again, and looks again at one a look could not tell', () => {
    const watch = new RetiredPartitionWatch(5_000, 16);
    watch.lost(5);
    watch.lost(6);
    expect(watch.heard([self, larger], 0)).toEqual([5, 6]);
    watch.found(5);
    watch.unsure(6);
    expect(watch.size).toBe(1);
    expect(watch.heard([self], 5_000)).toEqual([6]);
    watch.unsure(5); // found meanwhile: not looked for
    expect(watch.heard([self], 10_000)).toEqual([]);
  });

  it('looks at most atOnce at a time, and each partition in turn', () => {
    const watch = new RetiredPartitionWatch(5_000, 2);
    for (const index of [4, 5, 6, 7, 8]) watch.lost(index);
    const many = [self, { id: 'z', count: 16 }];
    const looks = [0, 5_000, 10_000, 15_000].map((at) => watch.heard(many, at));
    expect(looks).toEqual([
      [4, 5],
      [6, 7],
      [8, 4],
      [5, 6],
    ]);
  });
});
