import { Injectable, type CanActivate } from '@nestjs/common';
import { RetryConfigError } from '../../errors/retry-config.error.js';
import { DEFAULT_TOKEN_TTL_MS, normalisePath, parseOrigin, resolveDashboardConfig } from './dashboard.options.js';

@Injectable()
class AdminGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

describe('resolveDashboardConfig', () => {
  it('is closed by default: no guard and not open', () => {
    expect(resolveDashboardConfig({})).toEqual({
      path: '/retry',
      guard: undefined,
      open: false,
      tokenSecret: undefined,
      tokenTtlMs: DEFAULT_TOKEN_TTL_MS,
      trustedOrigins: [],
      allowedHosts: [],
      wholeVhost: false,
      heartbeatIntervalMs: 5_000,
    });
  });

  it('beats every heartbeatIntervalMs, from 250 ms to a minute, and names the key otherwise', () => {
    expect(resolveDashboardConfig({ heartbeatIntervalMs: 1_000 }).heartbeatIntervalMs).toBe(1_000);
    expect(() => resolveDashboardConfig({ heartbeatIntervalMs: 10 })).toThrow(/dashboard\.heartbeatIntervalMs is 10.*from 250 to 60000/s);
    expect(() => resolveDashboardConfig({ heartbeatIntervalMs: '5s' as never })).toThrow(/dashboard\.heartbeatIntervalMs/);
  });

  it("shows this application's queues unless wholeVhost is true, and refuses a value that is not a boolean", () => {
    expect(resolveDashboardConfig({ wholeVhost: true }).wholeVhost).toBe(true);
    expect(resolveDashboardConfig({ wholeVhost: false }).wholeVhost).toBe(false);
    expect(() => resolveDashboardConfig({ wholeVhost: 'yes' as never })).toThrow(/dashboard\.wholeVhost is "yes"/);
  });

  it('is open only when allowUnauthenticated is true and no guard is given', () => {
    expect(resolveDashboardConfig({ allowUnauthenticated: true }).open).toBe(true);
    expect(resolveDashboardConfig({ allowUnauthenticated: true, guard: AdminGuard }).open).toBe(false);
    expect(resolveDashboardConfig({ allowUnauthenticated: false }).open).toBe(false);
  });

  it('takes a guard class or instance, and refuses anything else naming the key', () => {
    expect(resolveDashboardConfig({ guard: AdminGuard }).guard).toBe(AdminGuard);
    const instance = new AdminGuard();
    expect(resolveDashboardConfig({ guard: instance }).guard).toBe(instance);
    expect(() => resolveDashboardConfig({ guard: {} as CanActivate })).toThrow(/dashboard\.guard is neither a guard class/);
  });

  it('refuses allowUnauthenticated given as a string (an env var passed through unparsed)', () => {
    expect(() => resolveDashboardConfig({ allowUnauthenticated: 'false' as unknown as boolean })).toThrow(RetryConfigError);
  });

  it('requires a token secret of 32 bytes or more', () => {
    expect(() => resolveDashboardConfig({ tokenSecret: 'short' })).toThrow(/dashboard\.tokenSecret has 5 bytes/);
    expect(resolveDashboardConfig({ tokenSecret: 'x'.repeat(32) }).tokenSecret).toEqual(Buffer.from('x'.repeat(32)));
  });

  it('checks the token lifetime and trusted origins', () => {
    expect(() => resolveDashboardConfig({ tokenTtlMs: 10 })).toThrow(/dashboard\.tokenTtlMs/);
    expect(resolveDashboardConfig({ trustedOrigins: ['https://ops.example.com/'] }).trustedOrigins).toEqual(['https://ops.example.com']);
    expect(() => resolveDashboardConfig({ trustedOrigins: ['https://ops.example.com/path'] })).toThrow(/dashboard\.trustedOrigins\[0\]/);
  });

  it('reads allowed hosts, refusing URLs and paths', () => {
    expect(resolveDashboardConfig({ allowedHosts: ['Orders', 'orders:3000', '[::1]:80'] }).allowedHosts).toEqual([
      'orders',
      'orders:3000',
      '[::1]:80',
    ]);
    expect(() => resolveDashboardConfig({ allowedHosts: ['http://orders'] })).toThrow(/dashboard\.allowedHosts\[0\]/);
    expect(() => resolveDashboardConfig({ allowedHosts: ['orders/x'] })).toThrow(/dashboard\.allowedHosts\[0\]/);
  });

  it('does not change the caller object', () => {
    const options = Object.freeze({ path: 'retry/', trustedOrigins: Object.freeze(['http://a:1']) as string[] });
    expect(resolveDashboardConfig(options).path).toBe('/retry');
  });
});

describe('normalisePath', () => {
  it('normalises slashes', () => {
    expect(normalisePath('retry')).toBe('/retry');
    expect(normalisePath('//ops//parked/')).toBe('/ops/parked');
  });

  it('refuses empty paths, dot segments, route parameters and wildcards', () => {
    for (const bad of ['', '/', '/../admin', '/retry/:id', '/retry/*', '/re try']) expect(() => normalisePath(bad)).toThrow(/dashboard\.path/);
  });
});

describe('parseOrigin', () => {
  it('reads scheme://host[:port] only', () => {
    expect(parseOrigin('http://localhost:3000')).toBe('http://localhost:3000');
    expect(parseOrigin('https://a.example:443')).toBe('https://a.example');
    for (const bad of ['ftp://a', 'https://u:p@a', 'https://a?x', 'a.example', 'null']) expect(parseOrigin(bad)).toBeUndefined();
  });
});
