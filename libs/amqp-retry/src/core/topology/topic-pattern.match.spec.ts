import { hasTopicWildcard, topicMatches } from './topic-pattern.match.js';

describe('topicMatches', () => {
  it.each([
    ['order.*', 'order.created', true],
    ['order.*', 'order.created.eu', false],
    ['order.*', 'order', false],
    ['order.#', 'order', true],
    ['order.#', 'order.created.eu', true],
    ['#.eu', 'order.created.eu', true],
    ['#', 'anything.at.all', true],
    ['*.created', 'created', false],
    ['*.created', 'order.created', true],
    ['order.#.eu', 'order.eu', true],
    ['order.#.eu', 'order.created.paid.eu', true],
    ['order.#.eu', 'order.created.us', false],
    ['order.created', 'order.created', true],
    ['order.created', 'order.createdx', false],
    ['order.*', 'orders.created', false],
  ])('%s against %s: %s', (pattern, key, expected) => {
    expect(topicMatches(pattern, key)).toBe(expected);
  });

  it('answers at once for many wildcards against a long key (no backtracking)', () => {
    const key = Array.from({ length: 5_000 }, () => 'a').join('.');
    const started = Date.now();
    expect(topicMatches('#.a.#.a.#.a.#.b', key)).toBe(false);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe('hasTopicWildcard', () => {
  it('is true only for a word that is * or #', () => {
    expect(['order.*', '#', 'a.#.b', 'order.created', '{"cmd":"*"}', 'a*b.c'].map(hasTopicWildcard)).toEqual([true, true, true, false, false, false]);
  });
});
