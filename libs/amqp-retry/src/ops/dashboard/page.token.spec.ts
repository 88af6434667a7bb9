import { PageTokens } from './page.token.js';

describe('PageTokens', () => {
  const key = Buffer.alloc(32, 7);
  const tokens = new PageTokens(key, 60 * 60_000);
  const now = Date.UTC(2026, 10, 23, 12);

  it('accepts a token it issued, until it expires', () => {
    const token = tokens.issue(now);
    expect(tokens.verify(token, now)).toBeUndefined();
    expect(tokens.verify(token, now + 60 * 60_000)).toBeUndefined();
    expect(tokens.verify(token, now + 60 * 60_000 + 1)).toBe('an expired page token; reload the page');
  });

  it('issues a different token for every page', () => {
    expect(tokens.issue(now)).not.toBe(tokens.issue(now));
  });

  it('refuses a token under another key (another process without a shared tokenSecret)', () => {
    const other = new PageTokens(Buffer.alloc(32, 8), 60 * 60_000);
    expect(tokens.verify(other.issue(now), now)).toBe('a page token this server did not issue');
    expect(new PageTokens(key, 60 * 60_000).verify(tokens.issue(now), now)).toBeUndefined();
  });

  it('refuses a token whose time was changed to extend it', () => {
    const [, nonce, mac] = tokens.issue(now - 2 * 60 * 60_000).split('.');
    expect(tokens.verify(`${now.toString(36)}.${nonce}.${mac}`, now)).toBe('a page token this server did not issue');
  });

  it('refuses missing, malformed and future tokens', () => {
    expect(tokens.verify(undefined, now)).toBe('no page token');
    expect(tokens.verify('', now)).toBe('no page token');
    expect(tokens.verify('abc', now)).toBe('a malformed page token');
    expect(tokens.verify('x!.y.z', now)).toBe('a malformed page token');
    expect(tokens.verify(tokens.issue(now + 5 * 60_000), now)).toBe('a page token issued in the future');
  });
});
