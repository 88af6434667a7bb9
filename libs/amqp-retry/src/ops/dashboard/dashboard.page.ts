import { BOOT_STYLE } from './dashboard.style.js';
import { escapeHtml } from './security-headers.js';

/** Paths of the assets, relative to the page's own path. */
export const SCRIPT_PATH = 'assets/app.js';
export const STYLE_PATH = 'assets/app.css';

export interface PageInput {
  /** The page's own path as the browser asked for it (the global prefix included), without a trailing slash. */
  base: string;
  token: string;
  /** Served without a guard (allowUnauthenticated): the page says so. */
  open: boolean;
}

/**
 * The page's HTML. Its only inputs are the request path and the token, both escaped; every message datum arrives
 * later through the JSON API and is written with textContent by the script.
 */
export function renderPage({ base, token, open }: PageInput): string {
  const at = (path: string) => escapeHtml(`${base}/${path}`);
  const banner = open
    ? `<p class="banner open" role="alert" id="open-banner"><strong>This page is open.</strong> It was mounted with allowUnauthenticated: anyone who can reach this address can read, replay and purge parked messages. Use it for local work only; give the dashboard a guard anywhere else.</p>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="retry-dashboard-token" content="${escapeHtml(token)}">
<meta name="retry-dashboard-base" content="${escapeHtml(base)}">
<title>Parked messages</title>
<style>${BOOT_STYLE}</style>
<link rel="stylesheet" href="${at(STYLE_PATH)}">
<script src="${at(SCRIPT_PATH)}" defer></script>
</head>
<body>
<div id="boot" role="status">
  <p><strong>Loading the parked-messages page…</strong></p>
  <p class="later" role="alert">If this stays, this browser’s requests for the page’s own script and stylesheet (<code>${at('assets/')}…</code>) were refused. The guard given to RetryDashboardModule runs before every request under <code>${escapeHtml(base)}</code>, the page’s script, stylesheet and API included, and must accept each of them: they carry only what the browser sends by itself, a session cookie or HTTP Basic credentials; a header such as a bearer token, added by hand, never reaches them. See the README, “Guarding the page”.</p>
</div>
<header>
  <h1>Parked messages</h1>
  <button type="button" id="refresh">Refresh</button>
</header>
${banner}
<div class="banner refused" role="alert" id="refused" hidden>
  <p><strong id="refused-title">The server refused this page’s request to its API.</strong></p>
  <p id="refused-server"></p>
  <p>Reload the page (a page’s token expires after a while). If it is refused again, the guard given to RetryDashboardModule refuses this browser’s requests to <code id="refused-base"></code>/api/. The page’s own requests carry only what the browser sends by itself, a session cookie or HTTP Basic credentials; a header such as a bearer token, added by hand, never reaches them. Sign in again, or see the README, “Guarding the page”.</p>
</div>
<p id="status" role="status" aria-live="polite">Loading…</p>
<main>
  <section aria-labelledby="queues-title">
    <h2 id="queues-title">Queues</h2>
    <div class="table-wrap"><table id="queues">
      <thead><tr><th>Handler queue</th><th class="num">Ready</th><th>Tiers</th><th class="num">Parked</th></tr></thead>
      <tbody></tbody>
    </table></div>
  </section>
  <section aria-labelledby="groups-title">
    <h2 id="groups-title">Parked, grouped</h2>
    <p class="hint">Choose a group to list its messages.</p>
    <div class="groups">
      <div><h3>By reason</h3><ul id="by-reason" class="group-list"></ul></div>
      <div><h3>By error</h3><ul id="by-error" class="group-list"></ul></div>
    </div>
  </section>
  <section aria-labelledby="messages-title">
    <h2 id="messages-title">Messages</h2>
    <form id="filter" autocomplete="off">
      <label>Parking queue <select name="errorQueue" id="f-queue"></select></label>
      <label>Reason <input name="reason" id="f-reason" list="reasons"></label>
      <label>Error contains <input name="error" id="f-error"></label>
      <label>Body contains <input name="text" id="f-text"></label>
      <label>Parked since <input name="since" id="f-since" type="datetime-local"></label>
      <label>Parked until <input name="until" id="f-until" type="datetime-local"></label>
      <datalist id="reasons"><option value="exhausted"><option value="non-retryable"><option value="malformed"><option value="redelivery-limit"><option value="undeliverable"></datalist>
      <div class="actions"><button type="submit">Apply</button><button type="button" id="clear-filter">Clear</button></div>
    </form>
    <div class="bulk actions">
      <button type="button" id="replay-selected" disabled>Replay selected</button>
      <button type="button" id="replay-filtered">Replay all matching</button>
      <button type="button" id="purge-selected" class="danger" disabled>Purge selected</button>
      <button type="button" id="purge-filtered" class="danger">Purge all matching</button>
      <button type="button" id="export-filtered">Export matching (JSON lines)</button>
    </div>
    <p id="list-summary"></p>
    <ul id="messages" class="messages"></ul>
    <div class="actions pager"><button type="button" id="prev">Previous</button><span id="page-info"></span><button type="button" id="next">Next</button></div>
  </section>
</main>
<dialog id="detail" aria-labelledby="detail-title">
  <div class="dialog-head"><h2 id="detail-title">Message</h2><button type="button" class="close" id="detail-close" aria-label="Close">&times;</button></div>
  <dl id="detail-facts" class="facts"></dl>
  <h3>Body</h3>
  <pre id="detail-body" class="body"></pre>
  <div id="edit-area" hidden>
    <label for="edit-body">Corrected body</label>
    <textarea id="edit-body" rows="8" spellcheck="false"></textarea>
  </div>
  <div class="actions">
    <button type="button" id="detail-replay">Replay</button>
    <button type="button" id="detail-edit">Edit and replay</button>
    <button type="button" id="detail-send-edit" hidden>Replay corrected body</button>
    <button type="button" id="detail-purge" class="danger">Purge</button>
  </div>
  <h3>Properties</h3>
  <pre id="detail-properties"></pre>
  <h3>Headers</h3>
  <pre id="detail-headers"></pre>
  <h3>Death history</h3>
  <pre id="detail-deaths"></pre>
</dialog>
<dialog id="confirm" aria-labelledby="confirm-text">
  <p id="confirm-text"></p>
  <div class="actions"><button type="button" id="confirm-cancel">Cancel</button><button type="button" id="confirm-ok" class="danger">Confirm</button></div>
</dialog>
<noscript>This page needs JavaScript.</noscript>
</body>
</html>
`;
}
