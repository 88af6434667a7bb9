import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Tokens the page sends back with every state-changing call: `<issued-at>.<nonce>.<mac>`, HMAC-SHA256 under a key
 * the server keeps. A new one comes with every page load; nothing is stored, so any instance with the same key
 * accepts it until it expires. A cross-site page cannot read the page and so cannot learn one.
 */
export class PageTokens {
  constructor(
    private readonly key: Buffer,
    private readonly ttlMs: number,
  ) {}

  /** A key for one process, when the user gives none. */
  static randomKey(): Buffer {
    return randomBytes(32);
  }

  issue(now: number = Date.now()): string {
    const payload = `${now.toString(36)}.${randomBytes(16).toString('base64url')}`;
    return `${payload}.${this.mac(payload)}`;
  }

  /** Why the token is refused, or undefined when it is good. */
  verify(token: string | undefined, now: number = Date.now()): string | undefined {
    if (!token) return 'no page token';
    const parts = token.split('.');
    if (parts.length !== 3 || !/^[0-9a-z]{1,12}$/.test(parts[0])) return 'a malformed page token';
    const expected = Buffer.from(this.mac(`${parts[0]}.${parts[1]}`));
    const given = Buffer.from(parts[2]);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'a page token this server did not issue';
    const issuedAt = parseInt(parts[0], 36);
    if (issuedAt > now + 60_000) return 'a page token issued in the future';
    if (now - issuedAt > this.ttlMs) return 'an expired page token; reload the page';
    return undefined;
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }
}
