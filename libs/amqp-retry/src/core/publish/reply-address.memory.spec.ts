import { REPLY_ADDRESS_TRUSTED_MS, ReplyAddressMemory } from './reply-address.memory.js';

describe('ReplyAddressMemory', () => {
  const refused = { kind: 'refused', reason: 'closed the connection' } as const;

  it("trusts 'exists' for a few seconds only, then the broker is asked again", () => {
    const memory = new ReplyAddressMemory();
    memory.remember('a', { kind: 'exists' }, 1_000);
    const trusted = REPLY_ADDRESS_TRUSTED_MS.exists;
    expect(trusted).toBeGreaterThanOrEqual(1_000);
    expect(trusted).toBeLessThanOrEqual(5_000);
    expect([memory.recall('a', 1_000), memory.recall('a', 1_000 + trusted - 1), memory.recall('a', 1_000 + trusted)]).toEqual([
      { kind: 'exists' },
      { kind: 'exists' },
      undefined,
    ]);
  });

  it("keeps 'gone' and 'refused' (an address never comes back), and never 'unknown'", () => {
    const memory = new ReplyAddressMemory();
    memory.remember('gone', { kind: 'gone' }, 0);
    memory.remember('forged', refused, 0);
    memory.remember('unasked', { kind: 'unknown', reason: 'no connection' }, 0);
    const later = 24 * 3_600_000;
    expect([memory.recall('gone', later), memory.recall('forged', later), memory.recall('unasked', 0)]).toEqual([
      { kind: 'gone' },
      refused,
      undefined,
    ]);
  });

  it('holds at most its capacity, forgetting the oldest answer first (an answer given again is the newest)', () => {
    const memory = new ReplyAddressMemory(2);
    memory.remember('a', { kind: 'gone' }, 0);
    memory.remember('b', { kind: 'gone' }, 0);
    memory.remember('a', { kind: 'gone' }, 1);
    memory.remember('c', { kind: 'gone' }, 2);
    expect(['a', 'b', 'c'].map((address) => memory.recall(address, 3)?.kind)).toEqual(['gone', undefined, 'gone']);
  });

  it('keeps a forged address however many honest callers it answered about since (kept apart)', () => {
    const memory = new ReplyAddressMemory(2);
    memory.remember('forged', refused, 0);
    for (const caller of ['h1', 'h2', 'h3']) memory.remember(caller, { kind: 'exists' }, 0);
    expect([memory.recall('forged', 1), memory.recall('h1', 1), memory.recall('h3', 1)]).toEqual([refused, undefined, { kind: 'exists' }]);
  });
});
