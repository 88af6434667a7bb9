/**
 * The page's requests to its API, under the base and with the token the page's `<meta>` tags carry: JSON in and out,
 * the server's refusal (401, 403) said where it cannot be missed.
 */
import { byId, meta } from './dom.helpers.js';
import { status } from './status.view.js';

const TOKEN = meta('retry-dashboard-token');
const BASE = meta('retry-dashboard-base');

/**
 * The server refused one of the page's own requests (401 or 403): say so where it cannot be missed, with what to do.
 * A guard that lets the page through but not its API (a header the browser does not send by itself) lands here.
 */
function refused(code: number, message: string): void {
  const what = code === 401 ? 'Not signed in (401 Unauthorized)' : 'Not allowed (403 Forbidden)';
  byId('refused-title').textContent = `${what}: the server refused this page’s request to its API.`;
  byId('refused-server').textContent = message ? `The server said: ${message}` : '';
  byId('refused-base').textContent = BASE;
  byId('refused').hidden = false;
  document.body.classList.add('is-refused');
  status(`${what}.`, 'error');
}

/** A GET of `api/<path>`, or a POST of `body` as JSON with the page's token; the answer's JSON, or an error that says the server's message. */
export async function api<T>(path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const init: RequestInit = { method: body === undefined ? 'GET' : 'POST', credentials: 'same-origin', headers };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['x-retry-dashboard-token'] = TOKEN;
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`${BASE}/api/${path}`, init);
  const text = await response.text();
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null; // not JSON: the status line says what the server sent
  }
  if (!response.ok) {
    const said = (data as { message?: unknown } | null)?.message;
    const message = said ? (Array.isArray(said) ? said.join('; ') : String(said)) : text;
    if (response.status === 401 || response.status === 403) refused(response.status, message || response.statusText);
    throw new Error(`${response.status} ${message || response.statusText}`);
  }
  return data as T;
}

/** The text of `api/<path>` (an export), read through fetch so that whatever the guard reads (a header, a cookie) goes with it as with every call. */
export async function apiText(path: string): Promise<string> {
  const response = await fetch(`${BASE}/api/${path}`, { credentials: 'same-origin' });
  const text = await response.text();
  if (!response.ok) {
    if (response.status === 401 || response.status === 403) refused(response.status, text);
    throw new Error(`${response.status} ${text}`);
  }
  return text;
}
