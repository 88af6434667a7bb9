import type { ParkedMessageView } from './parked-messages.types.js';
import { FailureGroupTally, groupKeyOf, normalizeError, topFrame } from './failure.groups.js';

const view = (over: Partial<ParkedMessageView>): ParkedMessageView => ({
  id: 'm',
  queue: 'shop.payments',
  errorQueue: 'shop.payments.error',
  reason: 'exhausted',
  error: '',
  body: '',
  bodyEncoding: 'utf8',
  properties: {},
  headers: {},
  deaths: [],
  ...over,
});

describe('Failure groups', () => {
  it('masks ids, numbers and addresses so that one failure reads alike across messages', () => {
    expect(normalizeError('connect ECONNREFUSED 10.0.0.7:443 for order 8812')).toBe('connect ECONNREFUSED <ip> for order <n>');
    expect(normalizeError('user 3f2b8c1e-9a7d-4c2b-8e1f-0a1b2c3d4e5f (bob@example.com) not found')).toBe('user <id> (<email>) not found');
    expect(normalizeError('document 5f1d7ac0e4b0c3a1d2e3f4a5 missing')).toBe('document <id> missing');
    expect(normalizeError('timeout  after\n 30.5 s')).toBe('timeout after <n> s');
  });

  it('reads the top stack frame without its line and column', () => {
    expect(topFrame('Error: x\n    at PaymentsClient.charge (/app/payments.client.js:41:13)\n    at next (/app/x.js:1:1)')).toBe(
      'at PaymentsClient.charge (/app/payments.client.js:<n>)',
    );
    expect(topFrame(undefined)).toBe('');
  });

  it('groups by queue, reason, normalized error and frame, with counts, first and last seen and a sample, largest first', () => {
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    const views = [
      view({ id: 'a', error: 'ECONNREFUSED 10.0.0.7:443', parkedAt: at(5) }),
      view({ id: 'b', error: 'ECONNREFUSED 10.0.0.9:443', parkedAt: at(1) }),
      view({ id: 'c', error: 'ECONNREFUSED 10.0.0.9:443', parkedAt: at(9) }),
      view({ id: 'd', error: 'card 4242 declined', reason: 'non-retryable', parkedAt: at(3) }),
      view({ id: 'e', error: 'ECONNREFUSED 10.0.0.1:443', queue: 'shop.orders', errorQueue: 'shop.orders.error' }),
    ];
    const tally = new FailureGroupTally();
    for (const v of views) tally.add(v);
    const groups = tally.largest();
    expect(groups[0]).toMatchObject({ queue: 'shop.payments', reason: 'exhausted', error: 'ECONNREFUSED <ip>', count: 3 });
    expect(groups.slice(1).map((g) => [g.queue, g.reason, g.error, g.count])).toEqual(
      expect.arrayContaining([
        ['shop.orders', 'exhausted', 'ECONNREFUSED <ip>', 1],
        ['shop.payments', 'non-retryable', 'card <n> declined', 1],
      ]),
    );
    expect(groups[0]).toMatchObject({ firstSeen: at(1), lastSeen: at(9), sample: { id: 'a', error: 'ECONNREFUSED 10.0.0.7:443' } });
    expect(groups).toHaveLength(3);
    expect(groupKeyOf(views[0])).toBe(groupKeyOf(views[2]));
    expect(groupKeyOf(views[0])).not.toBe(groupKeyOf(views[4]));
    expect(groupKeyOf(views[0])).toMatch(/^[0-9a-f]{16}$/);
  });

  it('keeps at most its limit of groups: the groups kept count on, a message of another is counted as ungrouped', () => {
    const tally = new FailureGroupTally(3);
    for (const [n, error] of ['a', 'b', 'a', 'c', 'd', 'e', 'c', 'd', 'a'].entries()) tally.add(view({ id: `m${n}`, error }));
    expect(tally.largest().map((g) => [g.error, g.count])).toEqual([
      ['a', 3],
      ['c', 2],
      ['b', 1],
    ]);
    expect(tally.ungrouped).toBe(3);
  });
});
