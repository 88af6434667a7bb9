import { MAX_MEMBERS, MembershipView, readAnnouncement } from './membership.view.js';

describe('MembershipView', () => {
  /** b hears itself each second, as its own heartbeat comes back to it. */
  const hearingItself = (view: MembershipView, until: number) => {
    for (let at = 0; at <= until; at += 1_000) view.heard({ id: 'b' }, at);
  };

  it('counts itself and every member heard within the expiry', () => {
    const view = new MembershipView('b', 3_000, 2_000, 0);
    view.heard({ id: 'b' }, 0);
    view.heard({ id: 'a' }, 0);
    view.heard({ id: 'c' }, 1_000);
    hearingItself(view, 4_000);
    expect(view.members(2_000)).toEqual(['a', 'b', 'c']);
    expect(view.members(3_500)).toEqual(['b', 'c']);
    expect(view.members(4_001)).toEqual(['b']);
  });

  it('drops a member that announces it leaves at once, and its own leaving echo changes nothing', () => {
    const view = new MembershipView('b', 3_000, 2_000, 0);
    view.heard({ id: 'a' }, 0);
    view.heard({ id: 'a', leaving: true }, 10);
    view.heard({ id: 'b', leaving: true }, 10);
    expect(view.members(20)).toEqual(['b']);
  });

  it('is deaf when it has not heard itself for deafAfterMs, and expires nobody until it hears itself again', () => {
    const view = new MembershipView('b', 3_000, 2_000, 0);
    view.heard({ id: 'a' }, 0);
    view.heard({ id: 'b' }, 500);
    expect(view.isDeaf(2_500)).toBe(false);
    expect(view.isDeaf(2_501)).toBe(true);
    expect(view.members(10_000)).toEqual(['a', 'b']);
  });

  it('gives every other member a fresh expiry when it hears itself again: it could not hear them meanwhile', () => {
    const view = new MembershipView('b', 3_000, 2_000, 0);
    view.heard({ id: 'b' }, 0);
    view.heard({ id: 'a' }, 0);
    view.heard({ id: 'b' }, 10_000); // back after a long silence
    expect(view.members(12_999)).toEqual(['a', 'b']);
    view.heard({ id: 'b' }, 12_000);
    expect(view.members(13_001)).toEqual(['b']); // a was not heard in its fresh 3 s
  });

  it('trusts a restarted listener only once its own announcement comes back, and gives it deafAfterMs for that', () => {
    const view = new MembershipView('b', 3_000, 2_000, 0);
    view.heard({ id: 'b' }, 0);
    view.heard({ id: 'a' }, 0);
    view.listening(1_000); // a relisten, or a reconnection
    expect(view.hears(1_500)).toBe(false);
    expect(view.isDeaf(2_999)).toBe(false);
    expect(view.isDeaf(3_001)).toBe(true);
    expect(view.members(5_000)).toEqual(['a', 'b']); // not heard since: kept
    view.heard({ id: 'b' }, 5_000);
    expect(view.hears(5_000)).toBe(true);
    view.heard({ id: 'b' }, 7_000);
    expect(view.members(7_999)).toEqual(['a', 'b']);
    expect(view.members(8_001)).toEqual(['b']);
  });
});

describe('MembershipView.running', () => {
  it('gives each member alive the count it announced last, itself its own, and a member that said none no count', () => {
    const view = new MembershipView('b', 3_000, 2_000, 0, 8);
    view.heard({ id: 'b', count: 8 }, 0);
    view.heard({ id: 'a', count: 4 }, 0);
    view.heard({ id: 'c' }, 0);
    expect(view.running(100)).toEqual([
      { id: 'a', count: 4 },
      { id: 'b', count: 8 },
      { id: 'c', count: undefined },
    ]);
    view.heard({ id: 'a', leaving: true, count: 4 }, 200);
    expect(view.running(300).map((m) => m.id)).toEqual(['b', 'c']);
  });

  it('lists a member not ready as such, and tells when it says it is ready: from then on it may own partitions', () => {
    const view = new MembershipView('b', 3_000, 2_000, 0, 4);
    view.heard({ id: 'b' }, 0);
    expect(view.heard({ id: 'a', count: 4, ready: false }, 0)).toBe('new');
    expect(view.heard({ id: 'a', count: 4, ready: false }, 1_000)).toBe('known');
    expect(view.running(1_000)).toEqual([
      { id: 'a', count: 4, ready: false },
      { id: 'b', count: 4 },
    ]);
    expect(view.heard({ id: 'a', count: 4 }, 1_500)).toBe('ready');
    expect(view.heard({ id: 'a', count: 4 }, 2_000)).toBe('known');
    expect(view.running(2_000)).toEqual([
      { id: 'a', count: 4 },
      { id: 'b', count: 4 },
    ]);
  });

  it('keeps the counts of the members it keeps while it does not hear itself', () => {
    const view = new MembershipView('b', 3_000, 2_000, 0, 8);
    view.heard({ id: 'b', count: 8 }, 0);
    view.heard({ id: 'a', count: 4 }, 0);
    view.heard({ id: 'b', count: 8 }, 10_000); // back after a long silence: a gets a fresh expiry, its count kept
    expect(view.running(12_000)).toEqual([
      { id: 'a', count: 4 },
      { id: 'b', count: 8 },
    ]);
  });
});

describe('readAnnouncement', () => {
  it('reads a member id and ignores anything else', () => {
    expect(readAnnouncement(Buffer.from('{"id":"m1"}'))).toEqual({ id: 'm1', leaving: false });
    expect(readAnnouncement(Buffer.from('{"id":"m1","leaving":true}'))).toEqual({ id: 'm1', leaving: true });
    expect(readAnnouncement(Buffer.from('{"id":"m1","count":8}'))).toEqual({ id: 'm1', leaving: false, count: 8 });
    expect(readAnnouncement(Buffer.from('{"id":"m1","ready":false}'))).toStrictEqual({ id: 'm1', leaving: false, ready: false });
    for (const ready of ['true', '0', '"false"', 'null']) {
      expect(readAnnouncement(Buffer.from(`{"id":"m1","ready":${ready}}`))).toStrictEqual({ id: 'm1', leaving: false });
    }
    for (const count of ['0', '1.5', '257', '"8"', 'null']) {
      expect(readAnnouncement(Buffer.from(`{"id":"m1","count":${count}}`))).toStrictEqual({ id: 'm1', leaving: false });
    }
    for (const bad of ['', 'null', '[]', '{"id":7}', '{"id":""}', 'not json', JSON.stringify({ id: 'x'.repeat(201) })]) {
      expect(readAnnouncement(Buffer.from(bad))).toBeUndefined();
    }
  });

  it('keeps its sorted members until one comes or goes, and counts them right after', () => {
    const view = new MembershipView('b', 3_000, 2_000, 0);
    view.heard({ id: 'b' }, 0);
    expect(view.heard({ id: 'c' }, 0)).toBe('new');
    expect(view.members(0)).toEqual(['b', 'c']);
    expect(view.heard({ id: 'c' }, 100)).toBe('known');
    expect(view.heard({ id: 'a' }, 100)).toBe('new');
    expect(view.members(100)).toEqual(['a', 'b', 'c']);
    view.heard({ id: 'a', leaving: true }, 200);
    expect(view.members(200)).toEqual(['b', 'c']);
  });

  it('hears no new member beyond MAX_MEMBERS others, while the known ones are still heard', () => {
    const view = new MembershipView('b', 3_000, 2_000, 0);
    for (let i = 0; i < MAX_MEMBERS; i++) expect(view.heard({ id: `m${i}` }, 0)).toBe('new');
    expect(view.heard({ id: 'one-more' }, 0)).toBe('full');
    expect(view.heard({ id: 'm0' }, 0)).toBe('known');
    expect(view.members(0)).toHaveLength(MAX_MEMBERS + 1);
  });
});
