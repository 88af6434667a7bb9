import { BOOT_STYLE } from './dashboard.style.js';
import { escapeHtml } from './security.headers.js';
import { DASHBOARD_HTML } from './dashboard.client.generated.js';

/** Paths of the assets, relative to the page's own path. */
export const SCRIPT_PATH = 'assets/app.js';
export const STYLE_PATH = 'assets/app.css';
export const ICON_PATH = 'assets/icon.svg';

/** The page's icon, served from its own route (an inline data: URL would need the CSP's img-src to admit data:). */
export const DASHBOARD_ICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#2156c6"/>' +
  '<path d="M9 11h14M9 16h10M9 21h6" stroke="#fff" stroke-width="3" stroke-linecap="round"/><circle cx="23" cy="21" r="3" fill="#fde7c7"/></svg>';

export interface PageInput {
  /** The page's own path as the browser asked for it (the global prefix included), without a trailing slash. */
  base: string;
  token: string;
  /** Served without a guard (allowUnauthenticated): the page says so. */
  open: boolean;
}

const OPEN_BANNER =
  '<p class="banner open" role="alert" id="open-banner"><strong>This page is open.</strong> It was mounted with allowUnauthenticated: anyone who can reach this address can read, replay and purge parked messages. Use it for local work only; give the dashboard a guard anywhere else.</p>';

/**
 * The page's HTML (client/page.html). Its only inputs are the request path and the token, both escaped; every message
 * datum arrives later through the JSON API and is written with textContent by the script. The placeholders are filled
 * in one pass, so that an input's text is never read as a placeholder.
 */
export function renderPage({ base, token, open }: PageInput): string {
  const values: Record<string, string> = { base: escapeHtml(base), token: escapeHtml(token), bootStyle: BOOT_STYLE, banner: open ? OPEN_BANNER : '' };
  return DASHBOARD_HTML.replace(/\{\{(base|token|bootStyle|banner)\}\}/g, (_, name: string) => values[name]);
}
