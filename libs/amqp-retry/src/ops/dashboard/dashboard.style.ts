/**
 * The one style inline in the page (the CSP admits it by its hash, see SECURITY_HEADERS): the notice shown while the
 * page's own script and stylesheet load. Should a guard refuse them, the notice stays, styled, and after two seconds
 * says what to do: a page left as an unstyled shell tells an operator nothing.
 */
export const BOOT_STYLE =
  '#boot{margin:1rem;padding:.75rem 1rem;border-radius:8px;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;' +
  'background:#fbeceb;border:1px solid #efc2bf;color:#1d2330}#boot p{margin:.25rem 0}' +
  '#boot .later{visibility:hidden;animation:boot-later 0s linear 2s forwards}@keyframes boot-later{to{visibility:visible}}';

/** The page's stylesheet: a table on wide screens, stacked cards on a phone; system fonts, no external resource. */
export const DASHBOARD_STYLE = `
:root { --fg: #1d2330; --muted: #5b6475; --line: #d8dde6; --bg: #f6f7f9; --card: #fff; --accent: #2156c6; --danger: #b3261e; --warn-bg: #fff4d6; --ok: #1e7b34; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: center; justify-content: space-between; gap: 1rem; padding: .75rem 1rem; background: var(--card); border-bottom: 1px solid var(--line); position: sticky; top: 0; z-index: 1; }
h1 { font-size: 1.25rem; margin: 0; }
h2 { font-size: 1.1rem; margin: 0 0 .5rem; }
h3 { font-size: .95rem; margin: .75rem 0 .35rem; color: var(--muted); }
main { padding: 0 1rem 2rem; max-width: 1200px; margin: 0 auto; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem; margin-top: 1rem; }
.banner { margin: 1rem; padding: .75rem 1rem; border-radius: 8px; }
.banner.open { background: var(--warn-bg); border: 1px solid #e0b84a; }
.banner.refused { background: #fbeceb; border: 1px solid #efc2bf; color: var(--danger); }
.banner.refused p { margin: .25rem 0; }
.banner.refused code { font-size: .9em; }
body.is-refused main button, body.is-refused .bulk button { opacity: .5; pointer-events: none; }
[hidden] { display: none !important; }
#status { margin: .5rem 1rem 0; min-height: 1.4em; color: var(--muted); }
#status.error { color: var(--danger); font-weight: 600; }
#status.ok { color: var(--ok); font-weight: 600; }
.hint { color: var(--muted); margin: 0 0 .5rem; }
button { font: inherit; padding: .45rem .8rem; border-radius: 6px; border: 1px solid var(--line); background: #eef1f6; color: var(--fg); cursor: pointer; min-height: 2.5rem; }
button:hover:not(:disabled) { border-color: var(--accent); }
button:disabled { opacity: .5; cursor: not-allowed; }
button.danger { background: #fbeceb; border-color: #efc2bf; color: var(--danger); }
button.link { background: none; border: none; padding: 0; min-height: 0; color: var(--accent); text-decoration: underline; text-align: left; overflow-wrap: anywhere; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.name { overflow-wrap: break-word; word-break: normal; }
.strip { list-style: none; display: flex; flex-wrap: wrap; gap: .5rem; margin: .5rem auto 0; padding: 0 1rem; max-width: 1200px; }
.strip-item { display: flex; flex-direction: column; min-width: 0; background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .4rem .75rem; min-width: 9rem; flex: 1 1 9rem; }
.strip-item.bad { border-color: #efc2bf; background: #fbeceb; }
.strip-label { color: var(--muted); font-size: .8rem; }
.strip-value { font-weight: 700; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
.state-bad { background: #fbeceb; color: var(--danger); }
tr.gone { color: var(--muted); }
.names { list-style: none; margin: 0; padding: 0; }
.cause { margin: 0 0 .25rem; color: var(--danger); font-size: .85rem; }
svg.hour { width: 100%; min-width: 160px; max-width: 360px; height: 36px; background: var(--bg); border-radius: 3px; }
.line-handled { stroke: var(--ok); } .line-retried { stroke: #b7791f; } .line-parked { stroke: var(--danger); } .line-failed { stroke: #7b3fb3; }
.legend { list-style: none; margin: 0; padding: 0; font-size: .85rem; font-variant-numeric: tabular-nums; }
.key-handled::before, .key-retried::before, .key-parked::before, .key-failed::before { content: ""; display: inline-block; width: .6rem; height: .6rem; border-radius: 2px; margin-right: .3rem; }
.key-handled::before { background: var(--ok); } .key-retried::before { background: #b7791f; } .key-parked::before { background: var(--danger); } .key-failed::before { background: #7b3fb3; }
.failure-groups, .history-list, .timeline { margin: 0; padding: 0; list-style: none; }
.failure-group { border: 1px solid var(--line); border-radius: 8px; padding: .6rem .75rem; margin-bottom: .6rem; }
.fg-head { display: flex; gap: .6rem; align-items: baseline; }
.fg-head .count { font-weight: 700; }
.fg-error { font-weight: 600; overflow-wrap: anywhere; }
.fg-facts, .fg-sample { margin: .2rem 0; overflow-wrap: anywhere; }
.history-list li { margin: .2rem 0; font-size: .9rem; }
.timeline li { border-left: 3px solid var(--line); padding: .2rem .6rem; margin: 0 0 .2rem; }
.timeline time { color: var(--muted); font-variant-numeric: tabular-nums; }
form#search { display: flex; gap: .5rem; align-items: flex-end; flex-wrap: wrap; }
form#search label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); flex: 1 1 20rem; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: .5rem 0; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .45rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.chosen { background: #eef3fd; }
tr.chosen th { box-shadow: inset 3px 0 0 var(--accent); }
td.parked.hot { color: var(--danger); font-weight: 700; }
.tiers { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .35rem; }
.tiers li, .count { font-variant-numeric: tabular-nums; }
.tiers li { background: var(--bg); border: 1px solid var(--line); border-radius: 999px; padding: 0 .5rem; font-size: .85rem; }
.tier-name { color: var(--muted); }
.groups { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 2fr); gap: 1rem; }
.groups > div { min-width: 0; }
.group-list { list-style: none; margin: 0; padding: 0; }
.group-list li { margin: 0 0 .35rem; }
.group { display: flex; width: 100%; min-width: 0; justify-content: space-between; gap: .75rem; text-align: left; }
.group-label { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.group .count { font-weight: 700; }
.empty { color: var(--muted); }
form#filter { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: .5rem .75rem; }
form#filter label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); }
form#filter .actions { grid-column: 1 / -1; margin: 0; }
input, select, textarea { font: inherit; padding: .4rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: #fff; color: var(--fg); min-height: 2.5rem; width: 100%; }
.messages { list-style: none; margin: 0; padding: 0; }
.message { border: 1px solid var(--line); border-radius: 8px; padding: .6rem .75rem; margin-bottom: .6rem; }
.message-head { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.message-head input { width: 1.25rem; min-height: 1.25rem; }
.message time { color: var(--muted); font-size: .85rem; margin-left: auto; }
.message .error { margin: .35rem 0; font-weight: 600; word-break: break-word; }
.queue { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .85rem; }
.badge { border-radius: 999px; padding: 0 .55rem; font-size: .8rem; font-weight: 600; background: #e6ebf5; }
.badge.reason-exhausted { background: #fde7c7; }
.badge.reason-non-retryable { background: #f8d3d0; }
.badge.reason-malformed { background: #e5d8f5; }
pre { margin: 0; padding: .5rem; background: var(--bg); border-radius: 6px; overflow: auto; max-height: 22rem; white-space: pre-wrap; word-break: break-word; font: .85rem/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre.preview { max-height: 4.5rem; }
dialog { width: min(920px, calc(100vw - 1rem)); max-height: calc(100vh - 1rem); border: 1px solid var(--line); border-radius: 10px; padding: 1rem; }
dialog::backdrop { background: rgba(20, 25, 35, .45); }
#confirm { width: min(480px, calc(100vw - 1rem)); }
.dialog-head { display: flex; justify-content: space-between; align-items: center; }
.dialog-head .close { font-size: 1.3rem; line-height: 1; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem .75rem; margin: .5rem 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; word-break: break-word; }
textarea { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.pager { justify-content: center; }
.header-actions { display: flex; align-items: center; gap: .5rem; flex-wrap: wrap; justify-content: flex-end; }
.muted { color: var(--muted); font-size: .85rem; }
#auto-refresh[aria-pressed="true"] { background: var(--warn-bg); border-color: #e0b84a; }
.state { border-radius: 999px; padding: 0 .5rem; font-size: .8rem; font-weight: 600; white-space: nowrap; }
.state-ok { background: #dcefe0; color: var(--ok); }
.state-warn { background: var(--warn-bg); color: #7a5a00; }
.rates { list-style: none; margin: 0; padding: 0; display: grid; gap: .1rem; }
.rate { display: flex; align-items: center; gap: .35rem; font-size: .8rem; white-space: nowrap; }
.rate svg { background: var(--bg); border-radius: 3px; }
.rate polyline { stroke: var(--muted); }
.rate-handled polyline { stroke: var(--ok); }
.rate-retried polyline { stroke: #b7791f; }
.rate-parked polyline { stroke: var(--danger); }
.rate-label { color: var(--muted); }
.rate-value { font-variant-numeric: tabular-nums; font-weight: 600; }
.headers dd pre { max-height: 16rem; }
@media (max-width: 720px) {
  main { padding: 0 .5rem 1.5rem; }
  section { padding: .75rem; }
  .groups { grid-template-columns: minmax(0, 1fr); }
  form#filter { grid-template-columns: 1fr 1fr; }
  table, thead, tbody, tr, th, td { display: block; }
  thead { display: none; }
  tr { border: 1px solid var(--line); border-radius: 8px; margin-bottom: .5rem; padding: .25rem .5rem; }
  th, td { border: none; padding: .25rem 0; text-align: left; }
  td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); }
  .num { text-align: left; }
  .bulk button { flex: 1 1 45%; }
  .strip { padding: 0 .5rem; }
  .strip-item { flex-basis: 40%; }
}
@media (max-width: 420px) { form#filter { grid-template-columns: 1fr; } }
`;
