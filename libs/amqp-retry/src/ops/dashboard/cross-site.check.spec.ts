import { checkApiRead, checkOpenPageHost, checkStateChange, headerValue, TOKEN_HEADER } from './cross-site.check.js';

const post = (headers: Record<string, string | string[]>) => ({
  host: 'ops.example.com:3000',
  'content-type': 'application/json',
  [TOKEN_HEADER]: 't',
  ...headers,
});

describe('checkStateChange', () => {
  it('accepts the page own POST: same-origin fetch with JSON, token and matching Origin', () => {
    expect(checkStateChange('POST', post({ 'sec-fetch-site': 'same-origin', origin: 'http://ops.example.com:3000' }))).toEqual({ ok: true });
  });

  it('accepts a client that is not a browser (no Origin, no Sec-Fetch-Site) when it sends JSON and the token', () => {
    expect(checkStateChange('POST', post({}))).toEqual({ ok: true });
  });

  it('refuses other methods, even with everything else right', () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) expect(checkStateChange(method, post({})).ok).toBe(false);
  });

  it('refuses bodies a cross-site form can send without a preflight', () => {
    for (const type of ['application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/plain']) {
      expect(checkStateChange('POST', post({ 'content-type': type }))).toEqual({ ok: false, reason: 'Content-Type must be application/json' });
    }
    expect(checkStateChange('POST', post({ 'content-type': 'application/json; charset=utf-8' })).ok).toBe(true);
  });

  it('refuses a call without the token header', () => {
    const headers: Record<string, string> = post({});
    delete headers[TOKEN_HEADER];
    expect(checkStateChange('POST', headers)).toEqual({ ok: false, reason: `the ${TOKEN_HEADER} header is missing; reload the page` });
  });

  it('refuses when the browser says another site (or a sibling subdomain) sent it', () => {
    for (const site of ['cross-site', 'same-site', 'none']) {
      expect(checkStateChange('POST', post({ 'sec-fetch-site': site })).ok).toBe(false);
    }
  });

  it('refuses an Origin that is not the Host, and the opaque origin null', () => {
    expect(checkStateChange('POST', post({ origin: 'https://evil.example' }))).toEqual({
      ok: false,
      reason: 'Origin "https://evil.example" is not this host',
    });
    expect(checkStateChange('POST', post({ origin: 'null' })).ok).toBe(false);
    expect(checkStateChange('POST', post({ origin: 'http://ops.example.com:3001' })).ok).toBe(false);
    expect(checkStateChange('POST', post({ origin: 'http://ops.example.com:3000', host: 'OPS.example.com:3000' })).ok).toBe(true);
  });

  it('accepts a trusted origin behind a proxy that rewrote Host, also when the browser calls it same-site', () => {
    const headers = post({ origin: 'https://ops.example.com', host: 'internal:8080', 'sec-fetch-site': 'same-site' });
    expect(checkStateChange('POST', headers).ok).toBe(false);
    expect(checkStateChange('POST', headers, ['https://ops.example.com'])).toEqual({ ok: true });
  });

  it('reads a header sent twice as suspicious rather than picking one', () => {
    expect(headerValue({ origin: ['http://a', 'http://b'] }, 'origin')).toBe('');
    expect(checkStateChange('POST', post({ origin: ['http://ops.example.com:3000', 'http://evil'] })).ok).toBe(false);
  });
});

describe('checkApiRead', () => {
  it('accepts same-origin reads and clients without fetch metadata', () => {
    expect(checkApiRead({ 'sec-fetch-site': 'same-origin' })).toEqual({ ok: true });
    expect(checkApiRead({})).toEqual({ ok: true });
  });

  it('refuses reads another site asked for', () => {
    expect(checkApiRead({ 'sec-fetch-site': 'cross-site' }).ok).toBe(false);
    expect(checkApiRead({ 'sec-fetch-site': 'same-site' }).ok).toBe(false);
  });
});

describe('checkOpenPageHost', () => {
  it('answers loopback names with any port', () => {
    for (const host of ['localhost:3000', 'LOCALHOST', 'app.localhost:8080', '127.0.0.1:3000', '127.1.2.3', '[::1]:3000']) {
      expect([host, checkOpenPageHost({ host })]).toEqual([host, { ok: true }]);
    }
  });

  it('refuses any other name: a rebound DNS name, a LAN address, a missing or odd Host', () => {
    for (const host of ['evil.example:3000', 'localhost.evil.example', '192.168.1.10:3000', '127.0.0.1.nip.io', '']) {
      expect([host, checkOpenPageHost({ host }).ok]).toEqual([host, false]);
    }
    expect(checkOpenPageHost({})).toEqual({ ok: false, reason: 'the Host header is missing' });
    expect(checkOpenPageHost({ host: 'a b' }).ok).toBe(false);
  });

  it('answers hosts the user listed, by name or name:port', () => {
    expect(checkOpenPageHost({ host: 'orders:3000' }, ['orders'])).toEqual({ ok: true });
    expect(checkOpenPageHost({ host: 'orders:3000' }, ['orders:3000'])).toEqual({ ok: true });
    expect(checkOpenPageHost({ host: 'orders:3001' }, ['orders:3000']).ok).toBe(false);
  });
});
