import { createHash } from 'node:crypto';
import { renderPage } from './dashboard.page.js';
import { DASHBOARD_SCRIPT } from './dashboard.client.generated.js';
import { escapeHtml, SECURITY_HEADERS } from './security.headers.js';

describe('renderPage', () => {
  it('escapes the request path and the token it embeds', () => {
    const html = renderPage({ base: '/x"><script>alert(1)</script>', token: 'a"b', open: false });
    expect(html).not.toContain('<script>alert(1)');
    expect(html).toContain('content="/x&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;"');
    expect(html).toContain('content="a&#34;b"');
  });

  it('has no inline script: the only script is the asset route, which the CSP allows', () => {
    const html = renderPage({ base: '/retry', token: 't', open: false });
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((m) => [m[1].trim(), m[2]])).toEqual([['src="/retry/assets/app.js" defer', '']]);
    expect(html).not.toMatch(/\son[a-z]+=/i); // no inline event handlers either
  });

  it('has one inline style, the loading notice, which the CSP admits by its hash and nothing else inline', () => {
    const html = renderPage({ base: '/retry', token: 't', open: false });
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]);
    expect(styles).toHaveLength(1);
    const hash = createHash('sha256').update(styles[0]).digest('base64');
    expect(SECURITY_HEADERS['content-security-policy']).toContain(`style-src 'self' 'sha256-${hash}'`);
    expect(html).not.toMatch(/\sstyle=/i); // no style attributes, which a hash does not admit
  });

  it('says what to do when its own script and stylesheet are refused, and when its API is', () => {
    const html = renderPage({ base: '/ops/retry', token: 't', open: false });
    expect(html).toMatch(/<div id="boot"[\s\S]*If this stays[\s\S]*<code>\/ops\/retry\/assets\/…<\/code>[\s\S]*HTTP Basic/);
    expect(html).toMatch(/<div class="banner refused" role="alert" id="refused" hidden>/);
  });

  it('says plainly that the page is open only when it is', () => {
    expect(renderPage({ base: '/retry', token: 't', open: true })).toContain('This page is open.');
    expect(renderPage({ base: '/retry', token: 't', open: false })).not.toContain('This page is open');
  });
});

describe('the page script', () => {
  it('is valid JavaScript', () => {
    expect(() => new Function(DASHBOARD_SCRIPT)).not.toThrow();
  });

  it('never writes markup from strings: no innerHTML, outerHTML, insertAdjacentHTML, document.write or eval', () => {
    expect(DASHBOARD_SCRIPT).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
  });
});

describe('security headers', () => {
  it('forbid inline scripts and framing', () => {
    const csp = SECURITY_HEADERS['content-security-policy'];
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(SECURITY_HEADERS['x-content-type-options']).toBe('nosniff');
  });

  it('escapeHtml escapes the five characters that matter', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe('&#60;a href=&#34;x&#34; title=&#39;y&#39;&#62;&#38;&#60;/a&#62;');
  });
});
