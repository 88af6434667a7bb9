import { BOOT_STYLE } from './dashboard.style.js';
import { escapeHtml } from './security.headers.js';

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

/** A table the script fills in, its header row given as markup. */
const table = (id: string, head: string) =>
  `<div class="table-wrap"><table id="${id}">\n      <thead><tr>${head}</tr></thead>\n      <tbody></tbody>\n    </table></div>`;

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
<title>Retry console</title>
<style>${BOOT_STYLE}</style>
<link rel="icon" href="${at(ICON_PATH)}" type="image/svg+xml">
<link rel="stylesheet" href="${at(STYLE_PATH)}">
<script src="${at(SCRIPT_PATH)}" defer></script>
</head>
<body>
<div id="boot" role="status">
  <p><strong>Loading the retry console…</strong></p>
  <p class="later" role="alert">If this stays, this browser’s requests for the page’s own script and stylesheet (<code>${at('assets/')}…</code>) were refused. The guard given to RetryDashboardModule runs before every request under <code>${escapeHtml(base)}</code>, the page’s script, stylesheet and API included, and must accept each of them: they carry only what the browser sends by itself, a session cookie or HTTP Basic credentials; a header such as a bearer token, added by hand, never reaches them. See “Guarding the page” in the project’s docs/operations.md.</p>
</div>
<header>
  <h1>Retry console</h1>
  <div class="header-actions">
    <span id="refreshed" class="muted" aria-live="off"></span>
    <button type="button" id="auto-refresh" aria-pressed="false">Pause auto-refresh</button>
    <button type="button" id="refresh">Refresh</button>
  </div>
</header>
${banner}
<div class="banner refused" role="alert" id="refused" hidden>
  <p><strong id="refused-title">The server refused this page’s request to its API.</strong></p>
  <p id="refused-server"></p>
  <p>Reload the page (a page’s token expires after a while). If it is refused again, the guard given to RetryDashboardModule refuses this browser’s requests to <code id="refused-base"></code>/api/. The page’s own requests carry only what the browser sends by itself, a session cookie or HTTP Basic credentials; a header such as a bearer token, added by hand, never reaches them. Sign in again, or see “Guarding the page” in the project’s docs/operations.md.</p>
</div>
<p id="status" role="status" aria-live="polite">Loading…</p>
<ul id="strip" class="strip" aria-label="Summary"></ul>
<main>
  <section aria-labelledby="instances-title">
    <h2 id="instances-title">Instances</h2>
    <p class="hint" id="instances-note">From the instances' heartbeats.</p>
    ${table('instances', '<th>Instance</th><th>Status</th><th>Last beat</th><th>Consumes</th><th>Breakers</th>')}
  </section>
  <section aria-labelledby="history-title">
    <h2 id="history-title">Last hour</h2>
    <p class="hint">Every instance's messages per minute (handled, retried, parked, failed), kept by the instance serving this page from the heartbeats, and the worst minute's 95th percentile of processing time (the handler's call) and critical time (publish to handled). Percentiles read as the bound of their histogram bucket.</p>
    ${table('history', '<th>Queue</th><th>Per minute, last hour</th><th>Last hour</th><th>p95 (worst minute)</th>')}
  </section>
  <section aria-labelledby="queues-title">
    <h2 id="queues-title">Queues</h2>
    <p class="hint">Ready: waiting for a consumer. In flight: taken by this instance, not yet settled. Tiers: waiting for their next attempt. Rates: this instance's, per minute while this page is open (the last hour of every instance is above).</p>
    ${table('queues', '<th>Handler queue</th><th>State</th><th class="num">Ready</th><th class="num">In flight</th><th>Waiting in tiers</th><th class="num">Parked</th><th>Last 10 minutes</th>')}
  </section>
  <section aria-labelledby="ladders-title" id="ladders-section" hidden>
    <h2 id="ladders-title">Delay ladder</h2>
    <p class="hint">Delayed messages that are due wait here for the forwarder, which publishes them to their exchange; those it cannot deliver are parked.</p>
    ${table('ladders', '<th>Ready queue</th><th>State</th><th class="num">Due, not yet forwarded</th><th class="num">In flight</th><th class="num">Parked (undeliverable)</th>')}
  </section>
  <section aria-labelledby="flow-title">
    <h2 id="flow-title">Consumption</h2>
    <ul id="flow" class="group-list"></ul>
  </section>
  <section aria-labelledby="partitions-title" id="partitions-section" hidden>
    <h2 id="partitions-title">Partitions</h2>
    <p class="hint">Partitioned handlers: each partition queue, the instance that owns it (its one active consumer across all instances) and its ready messages, as this instance last read them (every heartbeat).</p>
    <div id="partitions"></div>
  </section>
  <section aria-labelledby="outbox-title" id="outbox-section" hidden>
    <h2 id="outbox-title">Outbox</h2>
    ${table('outbox', '<th>Table</th><th class="num">Waiting</th><th class="num">Oldest waiting</th><th class="num">Parked</th><th>This instance\'s relay</th>')}
  </section>
  <section aria-labelledby="groups-title">
    <h2 id="groups-title">Parked, grouped<span id="groups-scope" class="muted"></span></h2>
    <p class="hint">Choose a group to list its messages.</p>
    <div class="groups">
      <div><h3>By reason</h3><ul id="by-reason" class="group-list"></ul></div>
      <div><h3>By error</h3><ul id="by-error" class="group-list"></ul></div>
    </div>
  </section>
  <section aria-labelledby="failure-groups-title">
    <h2 id="failure-groups-title">Failure groups</h2>
    <p class="hint">Messages that failed alike (queue, reason, error with ids, numbers and addresses masked, top stack frame), as one unit of work: replay or purge a whole group at once. A replay returns each message to its queue once, acked here only after the broker confirmed its copy.</p>
    <ul id="failure-groups" class="failure-groups"></ul>
    <h3>Group history</h3>
    <ul id="group-history" class="history-list"></ul>
  </section>
  <section aria-labelledby="search-title">
    <h2 id="search-title">Find a message</h2>
    <form id="search" autocomplete="off" role="search">
      <label>Message id or correlation id <input name="id" id="search-id" required maxlength="200"></label>
      <div class="actions"><button type="submit">Find</button></div>
    </form>
    <p id="search-summary" role="status"></p>
    <ul id="search-results" class="messages"></ul>
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
      <datalist id="reasons"><option value="exhausted"><option value="non-retryable"><option value="malformed"><option value="redelivery-limit"><option value="expired"><option value="maxlen"><option value="undeliverable"><option value="no-handler"></datalist>
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
  <h3>Timeline</h3>
  <ol id="detail-timeline" class="timeline"></ol>
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
  <dl id="detail-headers" class="facts headers"></dl>
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
