import { createHash } from 'node:crypto';
import { BOOT_STYLE } from './dashboard.style.js';

/**
 * Headers on every response of the page, its assets and its API. The CSP allows scripts and styles from this origin
 * only (no inline script, no eval; one inline style, the page's loading notice, by its hash), so even a body that
 * slipped into the DOM as markup could not run; the page writes data with textContent in any case. No framing
 * (clickjacking a Replay all button), no sniffing, no caching of parked data, no referrer leaking the page's address.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'sha256-${createHash('sha256').update(BOOT_STYLE).digest('base64')}'`,
    "img-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};

/** Text made safe inside an HTML element or a double-quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
