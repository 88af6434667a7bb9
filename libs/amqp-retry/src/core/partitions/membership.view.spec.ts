import { MembershipView, readAnnouncement } from './membership.view.js';

describe('MembershipView', () => {
  /** b hears itself each second, as its own heartbeat comes back to it. */
  const hearingItself = (view: MembershipView, until: number) => {
    for (let at = 0; at <= until; at += 1_000) view.heard({ id: 'b' }, at);
  };

  it('counts itself and every member heard within the expiry', () => {
    const view = new MembershipView('b', 3_000, 2_000, 0);
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
    view.heard({ id: 'b' }, 10_000);
    expect(view.isDeaf(10_000)).toBe(false);
    expect(view.members(10_000)).toEqual(['b']);
  });

  it('gives a listener that starts deafAfterMs to hear itself, and never moves that mark back', () => {
    const view = new MembershipView('b', 3_000, 2_000, 0);
    expect(view.isDeaf(2_000)).toBe(false);
    view.listening(5_000);
    expect(view.isDeaf(6_999)).toBe(false);
    expect(view.isDeaf(7_001)).toBe(true);
    view.heard({ id: 'b' }, 8_000);
    view.listening(1_000);
    expect(view.isDeaf(9_000)).toBe(false);
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
