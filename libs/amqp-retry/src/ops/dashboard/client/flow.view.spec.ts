import { flowText } from './flow.view.js';

const time = (iso: string, withDate: boolean) => `${withDate ? 'date ' : ''}${iso}`;

describe("the page's Consumption list", () => {
  it('says running alone, and the rate limit when there is one', () => {
    expect(flowText({ queue: 'orders', state: 'running' }, time)).toBe('running');
    expect(flowText({ queue: 'orders', state: 'running', rateLimit: { calls: 50, per: '1s' } }, time)).toBe('running; at most 50 calls per 1s');
  });

  it('says who paused, since when and why, and a circuit that opened meanwhile', () => {
    const paused = { by: 'alice', reason: 'INC-142', since: '2026-11-24T21:00:00.000Z' };
    expect(flowText({ queue: 'orders', state: 'paused', paused }, time)).toBe('paused by alice since date 2026-11-24T21:00:00.000Z (INC-142)');
    expect(flowText({ queue: 'orders', state: 'paused', circuit: 'open', paused: { by: 'bob', since: 'T' } }, time)).toBe(
      'paused by bob since date T; circuit open',
    );
    expect(flowText({ queue: 'orders', state: 'paused', circuit: 'closed', paused: { by: 'bob', since: 'T' } }, time)).toBe(
      'paused by bob since date T',
    );
  });

  it('says until when an open circuit keeps the queue stopped', () => {
    expect(flowText({ queue: 'orders', state: 'open', circuit: 'open', openUntil: '2026-11-24T21:00:05.000Z' }, time)).toBe(
      'open until 2026-11-24T21:00:05.000Z',
    );
  });
});
