/**
 * Cross-site request checks for the page's API, pure so that every rule has a unit test. A state-changing call must
 * come from the page itself: a browser sends `Sec-Fetch-Site` and `Origin` with every POST, which a cross-site page
 * cannot forge, and it cannot send a JSON body or a custom header cross-site without a CORS preflight, which this API
 * never answers. Clients that are not browsers (curl, scripts) send neither header and still need the page token.
 */

/** Request headers as Node gives them: lower-case names. */
export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

export type CrossSiteVerdict = { ok: true } | { ok: false; reason: string };

/** The header that carries the page token; its presence alone already forces a preflight cross-site. */
export const TOKEN_HEADER = 'x-retry-dashboard-token';

const ok: CrossSiteVerdict = { ok: true };
const refuse = (reason: string): CrossSiteVerdict => ({ ok: false, reason });

/** One header's value; a header sent twice is ambiguous and reads as absent-but-suspicious (''). */
export function headerValue(headers: RequestHeaders, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) return value.length === 1 ? value[0] : '';
  return value;
}

/**
 * Reads (GET) of the API: refused when the browser says another site asked. Navigations to the page itself are not
 * checked here: following a link to it from a chat is fine, and the page holds no data until its own script asks.
 */
export function checkApiRead(headers: RequestHeaders): CrossSiteVerdict {
  const site = headerValue(headers, 'sec-fetch-site');
  if (site !== undefined && site !== 'same-origin') return refuse(`Sec-Fetch-Site is ${JSON.stringify(site)}, not same-origin`);
  return ok;
}

/**
 * State-changing calls: POST with a JSON body, from the page's own origin (or a trusted one), with the token header.
 * The token's value is checked apart (verifyPageToken).
 */
export function checkStateChange(method: string, headers: RequestHeaders, trustedOrigins: readonly string[] = []): CrossSiteVerdict {
  if (method.toUpperCase() !== 'POST') return refuse(`method ${method} cannot change state; use POST`);
  const type = headerValue(headers, 'content-type');
  if (type === undefined || type.split(';')[0].trim().toLowerCase() !== 'application/json') {
    return refuse('Content-Type must be application/json');
  }
  if (!headerValue(headers, TOKEN_HEADER)) return refuse(`the ${TOKEN_HEADER} header is missing; reload the page`);
  const origin = headerValue(headers, 'origin');
  // A trusted origin may be another site to the browser (a proxy's address); any other must be this very host.
  if (origin !== undefined && trustedOrigins.includes(origin)) return ok;
  const site = headerValue(headers, 'sec-fetch-site');
  if (site !== undefined && site !== 'same-origin') return refuse(`Sec-Fetch-Site is ${JSON.stringify(site)}, not same-origin`);
  const host = headerValue(headers, 'host');
  if (origin !== undefined && (!host || originHost(origin) !== host.toLowerCase()))
    return refuse(`Origin ${JSON.stringify(origin)} is not this host`);
  return ok;
}

/** `host[:port]` of an origin as the Host header spells it (default ports left out), or undefined (`null` included). */
function originHost(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.host.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An open page (allowUnauthenticated) answers only requests addressed to this machine by a loopback name, or to a
 * host the user listed. Without this, DNS rebinding turns it into a public page: a site the operator visits points
 * its own name at 127.0.0.1, and its script, now "same-origin", reads the page's token and purges. Webpack's and
 * Vite's dev servers check the Host header for the same reason.
 */
export function checkOpenPageHost(headers: RequestHeaders, allowedHosts: readonly string[] = []): CrossSiteVerdict {
  const host = headerValue(headers, 'host');
  if (!host) return refuse('the Host header is missing');
  const name = hostName(host);
  if (name === undefined) return refuse(`Host ${JSON.stringify(host)} is malformed`);
  if (isLoopbackName(name) || allowedHosts.some((allowed) => allowed.toLowerCase() === name || allowed.toLowerCase() === host.toLowerCase()))
    return ok;
  return refuse(
    `Host ${JSON.stringify(host)} is not a loopback name; an open page answers only local requests (list the host in allowedHosts, or give a guard)`,
  );
}

/** The name of a `host[:port]` (IPv6 in brackets), lower-case, or undefined. */
function hostName(host: string): string | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::\d{1,5})?$/i.exec(host.trim());
  return match?.[1].toLowerCase();
}

function isLoopbackName(name: string): boolean {
  if (name === 'localhost' || name.endsWith('.localhost') || name === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}
