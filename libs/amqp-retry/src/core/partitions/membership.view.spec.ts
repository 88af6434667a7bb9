import { MembershipView, readAnnouncement } from './membership.view.js';

describe('MembershipView', () => {
  it('counts itself and every member heard within the expiry', () => {
    const view = new MembershipView('b', 3_000);
    view.heard({ id: 'a' }, 0);
    view.heard({ id: 'c' }, 1_000);
    expect(view.members(2_000)).toEqual(['a', 'b', 'c']);
    expect(view.members(3_500)).toEqual(['b', 'c']);
    expect(view.members(4_001)).toEqual(['b']);
  });

  it('drops a member that announces it leaves at once, and ignores its own echo', () => {
    const view = new MembershipView('b', 3_000);
    view.heard({ id: 'a' }, 0);
    view.heard({ id: 'a', leaving: true }, 10);
    view.heard({ id: 'b', leaving: true }, 10);
    expect(view.members(20)).toEqual(['b']);
  });
});

describe('readAnnouncement', () => {
  it('reads a member id and ignores anything else', () => {
    expect(readAnnouncement(Buffer.from('{"id":"m1"}'))).toEqual({ id: 'm1', leaving: false });
    expect(readAnnouncement(Buffer.from('{"id":"m1","leaving":true}'))).toEqual({ id: 'm1', leaving: true });
    for (const bad of ['', 'null', '[]', '{"id":7}', '{"id":""}', 'not json', JSON.stringify({ id: 'x'.repeat(201) })]) {
      expect(readAnnouncement(Buffer.from(bad))).toBeUndefined();
    }
  });
});
