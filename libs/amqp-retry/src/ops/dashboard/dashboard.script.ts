/**
 * The page's script, served from its own route so that the CSP can forbid inline scripts. Plain ES2020 for any
 * current browser, no build step. Rule: message data (bodies, headers, errors, queue names) only ever reaches the
 * DOM through textContent, value or setAttribute of non-executable attributes; never innerHTML.
 */
export const DASHBOARD_SCRIPT = String.raw`'use strict';
(function () {
  var meta = function (name) { var m = document.querySelector('meta[name="' + name + '"]'); return m ? m.getAttribute('content') : ''; };
  var TOKEN = meta('retry-dashboard-token');
  var BASE = meta('retry-dashboard-base');
  var PAGE_SIZE = 50;
  var state = { seq: 0, queues: [], filter: {}, chosen: false, offset: 0, total: 0, items: [], selected: new Set(), detail: null };
  var $ = function (id) { return document.getElementById(id); };
  // The script runs: the notice that says what to do when it cannot (see BOOT_STYLE) goes.
  var boot = $('boot');
  if (boot) boot.hidden = true;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === undefined || value === null || value === false) return;
      if (key === 'text') node.textContent = String(value);
      else if (key === 'className') node.className = value;
      else if (key.slice(0, 2) === 'on') node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : String(value));
    });
    (children || []).forEach(function (child) { if (child) node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child); });
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function status(text, kind) {
    var node = $('status');
    node.textContent = text || '';
    node.className = kind || '';
  }

  /**
   * The server refused one of the page's own requests (401 or 403): say so where it cannot be missed, with what to do.
   * A guard that lets the page through but not its API (a header the browser does not send by itself) lands here.
   */
  function refused(code, message) {
    var what = code === 401 ? 'Not signed in (401 Unauthorized)' : 'Not allowed (403 Forbidden)';
    $('refused-title').textContent = what + ': the server refused this page’s request to its API.';
    $('refused-server').textContent = message ? 'The server said: ' + message : '';
    $('refused-base').textContent = BASE;
    $('refused').hidden = false;
    document.body.classList.add('is-refused');
    status(what + '.', 'error');
  }

  function api(path, body) {
    var init = { method: body === undefined ? 'GET' : 'POST', credentials: 'same-origin', headers: { accept: 'application/json' } };
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json';
      init.headers['x-retry-dashboard-token'] = TOKEN;
      init.body = JSON.stringify(body);
    }
    return fetch(BASE + '/api/' + path, init).then(function (response) {
      return response.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (!response.ok) {
          var message = data && data.message ? (Array.isArray(data.message) ? data.message.join('; ') : data.message) : text;
          if (response.status === 401 || response.status === 403) refused(response.status, String(message || response.statusText));
          throw new Error(response.status + ' ' + (message || response.statusText));
        }
        return data;
      });
    });
  }

  function query(params) {
    var parts = [];
    Object.keys(params).forEach(function (key) {
      if (params[key] !== undefined && params[key] !== '') parts.push(encodeURIComponent(key) + '=' + encodeURIComponent(params[key]));
    });
    return parts.length ? '?' + parts.join('&') : '';
  }

  function confirmAction(text) {
    return new Promise(function (resolve) {
      var dialog = $('confirm');
      $('confirm-text').textContent = text;
      var done = function (answer) {
        $('confirm-ok').onclick = null;
        $('confirm-cancel').onclick = null;
        dialog.onclose = null;
        if (dialog.open) dialog.close();
        resolve(answer);
      };
      $('confirm-ok').onclick = function () { done(true); };
      $('confirm-cancel').onclick = function () { done(false); };
      dialog.onclose = function () { done(false); };
      dialog.showModal();
    });
  }

  function shortTier(queue, tier) { return tier.indexOf(queue + '.') === 0 ? tier.slice(queue.length + 1) : tier; }
  function depth(n) { return n < 0 ? 'missing' : String(n); }
  function selectedQueue() { return state.queues.find(function (q) { return q.queue === state.filter.queue; }); }

  function renderQueues() {
    var body = $('queues').tBodies[0];
    clear(body);
    if (state.queues.length === 0) body.appendChild(el('tr', {}, [el('td', { colspan: 4, text: 'No handler queue found yet.' })]));
    state.queues.forEach(function (q) {
      var tiers = el('ul', { className: 'tiers' }, q.tiers.map(function (t) {
        return el('li', { title: t.queue }, [el('span', { className: 'tier-name', text: shortTier(q.queue, t.queue) }), ' ', el('span', { className: 'count', text: depth(t.messages) })]);
      }));
      var chosen = q.queue === state.filter.queue;
      body.appendChild(el('tr', { 'data-queue': q.queue, className: chosen ? 'chosen' : undefined, 'aria-current': chosen ? 'true' : undefined }, [
        el('th', { scope: 'row', 'data-label': 'Handler queue' }, [el('button', { type: 'button', className: 'link', text: q.queue, onclick: function () { chooseQueue(q.queue); } })]),
        el('td', { className: 'num', 'data-label': 'Ready', text: depth(q.messages) }),
        el('td', { 'data-label': 'Tiers' }, [tiers]),
        el('td', { className: 'num parked' + (q.parked > 0 ? ' hot' : ''), 'data-label': 'Parked', text: depth(q.parked) }),
      ]));
    });
    var select = $('f-queue');
    var current = state.filter.queue || '';
    clear(select);
    select.appendChild(el('option', { value: '', text: 'All queues' }));
    state.queues.forEach(function (q) { select.appendChild(el('option', { value: q.queue, text: q.queue + ' (' + depth(q.parked) + ' parked)' })); });
    select.value = current;
  }

  function renderGroups(summary) {
    [['by-reason', summary.byReason, 'reason'], ['by-error', summary.byError, 'error']].forEach(function (spec) {
      var list = $(spec[0]);
      clear(list);
      if (spec[1].length === 0) list.appendChild(el('li', { className: 'empty', text: 'Nothing parked.' }));
      spec[1].forEach(function (group) {
        var label = group[spec[2]] || '(none)';
        list.appendChild(el('li', {}, [el('button', {
          type: 'button', className: 'group', 'data-group': spec[2], title: label,
          onclick: function () { var f = {}; f[spec[2]] = group[spec[2]]; applyFilter(Object.assign({}, state.filter, { reason: undefined, error: undefined }, f)); },
        }, [el('span', { className: 'group-label', text: label }), el('span', { className: 'count', text: String(group.count) })])]));
      });
    });
  }

  function preview(item) {
    if (item.bodyEncoding === 'base64') return '(binary body, ' + Math.floor(item.body.length * 3 / 4) + ' bytes)';
    return item.body.length > 160 ? item.body.slice(0, 160) + '…' : item.body;
  }

  function renderList() {
    var list = $('messages');
    clear(list);
    state.items.forEach(function (item) {
      var key = item.errorQueue + '\n' + item.id;
      var box = el('input', { type: 'checkbox', 'aria-label': 'Select message ' + item.id, onchange: function (e) {
        if (e.target.checked) state.selected.add(key); else state.selected.delete(key);
        updateBulk();
      } });
      box.checked = state.selected.has(key);
      list.appendChild(el('li', { className: 'message', 'data-id': item.id, 'data-error-queue': item.errorQueue }, [
        el('div', { className: 'message-head' }, [
          box,
          el('span', { className: 'badge reason-' + item.reason.replace(/[^a-z-]/g, ''), text: item.reason || '?' }),
          el('span', { className: 'queue', text: item.queue || '(unknown queue)' }),
          el('time', { text: item.parkedAt ? new Date(item.parkedAt).toLocaleString() : '' }),
        ]),
        el('p', { className: 'error', text: item.error }),
        el('pre', { className: 'preview', text: preview(item) }),
        el('div', { className: 'actions' }, [
          el('button', { type: 'button', className: 'open', text: 'Details', onclick: function () { openDetail(item.errorQueue, item.id); } }),
          el('button', { type: 'button', className: 'replay-one', text: 'Replay', onclick: function () { replayOne(item); } }),
        ]),
      ]));
    });
    var from = state.total === 0 ? 0 : state.offset + 1;
    $('list-summary').textContent = state.total === 0 ? 'No parked message matches.' : 'Showing ' + from + '–' + (state.offset + state.items.length) + ' of ' + state.total + ' matching.';
    $('page-info').textContent = state.total > PAGE_SIZE ? 'Page ' + (Math.floor(state.offset / PAGE_SIZE) + 1) + ' of ' + Math.ceil(state.total / PAGE_SIZE) : '';
    $('prev').disabled = state.offset === 0;
    $('next').disabled = state.offset + state.items.length >= state.total;
    updateBulk();
  }

  function updateBulk() {
    var one = !!selectedQueue();
    $('replay-selected').disabled = state.selected.size === 0;
    $('purge-selected').disabled = state.selected.size === 0;
    $('replay-filtered').disabled = !one || state.total === 0;
    $('purge-filtered').disabled = !one || state.total === 0;
    $('export-filtered').disabled = !one || state.total === 0;
    var hint = one ? '' : 'Choose one queue to act on all matching messages.';
    $('replay-filtered').title = hint;
    $('purge-filtered').title = hint;
    $('export-filtered').title = hint;
  }

  function filterForApi() {
    var f = state.filter, out = {};
    ['queue', 'reason', 'error', 'text', 'since', 'until'].forEach(function (k) { if (f[k]) out[k] = f[k]; });
    return out;
  }

  /**
   * Queues first (depth checks only, cheap), then the groups and the list, which read whole parking queues: at the
   * first load they are read for the queue with the most parked messages only, not for every queue at once.
   */
  function load() {
    status('Loading…');
    var seq = ++state.seq; // a newer load wins: an older answer arriving late must not overwrite it
    return api('queues').then(function (queues) {
      if (seq !== state.seq) return;
      state.queues = queues;
      if (!state.chosen) {
        state.chosen = true;
        var worst = queues.filter(function (q) { return q.parked > 0; }).sort(function (a, b) { return b.parked - a.parked; })[0];
        if (worst) state.filter = Object.assign({}, state.filter, { queue: worst.queue });
        syncForm();
      }
      renderQueues();
      var filter = filterForApi();
      // The groups leave out the reason and error chosen, so that choosing one does not hide the others.
      var groupFilter = Object.assign({}, filter, { reason: undefined, error: undefined });
      return Promise.all([
        api('summary' + query(groupFilter)),
        api('messages' + query(Object.assign({}, filter, { offset: state.offset, limit: PAGE_SIZE }))),
      ]).then(function (results) {
        if (seq !== state.seq) return;
        if (results[1].items.length === 0 && state.offset > 0 && results[1].total > 0) {
          // The page emptied (its messages replayed or purged): show the last page that still has some.
          state.offset = Math.floor((results[1].total - 1) / PAGE_SIZE) * PAGE_SIZE;
          return load();
        }
        state.total = results[1].total;
        state.items = results[1].items;
        renderGroups(results[0]);
        renderList();
        status('Updated ' + new Date().toLocaleTimeString() + '.');
      });
    }).catch(function (error) { if (seq === state.seq) status('Could not load: ' + error.message, 'error'); });
  }

  function syncForm() {
    var form = $('filter'), filter = state.filter;
    form.elements.errorQueue.value = filter.queue || '';
    ['reason', 'error', 'text'].forEach(function (k) { form.elements[k].value = filter[k] || ''; });
    ['since', 'until'].forEach(function (k) { form.elements[k].value = filter[k] ? toLocalInput(filter[k]) : ''; });
  }

  function applyFilter(filter) {
    state.filter = filter;
    state.offset = 0;
    state.selected.clear();
    state.chosen = true;
    syncForm();
    return load();
  }
  function chooseQueue(queue) { return applyFilter(Object.assign({}, state.filter, { queue: queue })); }
  function toLocalInput(iso) {
    var d = new Date(iso), pad = function (n) { return String(n).padStart(2, '0'); };
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' + pad(d.getHours()) + ':' + pad(d.getMinutes());
  }

  function report(verb, result) {
    var done = verb === 'Purged' ? result.purged : result.replayed;
    var text = verb + ' ' + done + ' of ' + result.matched + ' matching.';
    if (result.failed && result.failed.length) text += ' ' + result.failed.length + ' left parked: ' + result.failed.slice(0, 3).map(function (f) { return f.id + ' (' + f.error + ')'; }).join('; ');
    status(text, result.failed && result.failed.length ? 'error' : 'ok');
  }

  function act(path, body, verb, question) {
    return confirmAction(question).then(function (yes) {
      if (!yes) { status('Cancelled.'); return; }
      status(verb === 'Purged' ? 'Purging…' : 'Replaying…');
      return api(path, body).then(function (result) {
        state.selected.clear();
        return load().then(function () { report(verb, result); });
      }).catch(function (error) { status((verb === 'Purged' ? 'Purge' : 'Replay') + ' failed: ' + error.message, 'error'); });
    });
  }

  function replayOne(item) {
    return act('replay', { errorQueue: item.errorQueue, ids: [item.id] }, 'Replayed', 'Replay this message to ' + (item.queue || 'its queue') + ' with fresh attempts?');
  }

  function bySelection(verb, path) {
    var groups = {};
    state.selected.forEach(function (key) { var i = key.indexOf('\n'); (groups[key.slice(0, i)] = groups[key.slice(0, i)] || []).push(key.slice(i + 1)); });
    var queues = Object.keys(groups);
    var n = state.selected.size;
    return confirmAction((verb === 'Replayed' ? 'Replay ' : 'Purge ') + n + ' selected message' + (n === 1 ? '' : 's') + (verb === 'Purged' ? '? They are deleted for good.' : ' with fresh attempts?')).then(function (yes) {
      if (!yes) { status('Cancelled.'); return; }
      var total = { matched: 0, replayed: 0, purged: 0, failed: [] };
      return queues.reduce(function (chain, errorQueue) {
        return chain.then(function () {
          return api(path, { errorQueue: errorQueue, ids: groups[errorQueue] }).then(function (r) {
            total.matched += r.matched; total.replayed += r.replayed || 0; total.purged += r.purged || 0; total.failed = total.failed.concat(r.failed || []);
          });
        });
      }, Promise.resolve()).then(function () {
        state.selected.clear();
        return load().then(function () { report(verb, total); });
      }).catch(function (error) { status('Failed: ' + error.message, 'error'); load(); });
    });
  }

  function byFilter(verb, path) {
    var q = selectedQueue();
    if (!q) return;
    var filter = filterForApi();
    var what = state.total + ' message' + (state.total === 1 ? '' : 's') + ' parked in ' + q.errorQueue + (Object.keys(filter).length > 1 ? ' that match the filter' : '');
    return act(path, { errorQueue: q.errorQueue, filter: filter }, verb, verb === 'Replayed' ? 'Replay all ' + what + ' to ' + q.queue + '?' : 'Purge all ' + what + '? They are deleted for good.');
  }

  /** Downloads through fetch, so that whatever the guard reads (a header, a cookie) goes with it as with every call. */
  function exportFiltered() {
    var q = selectedQueue();
    if (!q) return;
    status('Exporting…');
    var path = 'export' + query(Object.assign({ errorQueue: q.errorQueue }, filterForApi()));
    return fetch(BASE + '/api/' + path, { credentials: 'same-origin' }).then(function (response) {
      if (!response.ok) return response.text().then(function (text) {
        if (response.status === 401 || response.status === 403) refused(response.status, text);
        throw new Error(response.status + ' ' + text);
      });
      return response.text().then(function (text) {
        var count = text.split('\n').filter(function (line) { return line !== ''; }).length;
        var blob = new Blob([text], { type: 'application/x-ndjson' });
        var link = el('a', { href: URL.createObjectURL(blob), download: q.errorQueue.replace(/[^A-Za-z0-9._-]/g, '_') + '.jsonl' });
        document.body.appendChild(link);
        link.click();
        link.remove();
        setTimeout(function () { URL.revokeObjectURL(link.href); }, 10000);
        status('Exported ' + count + ' message' + (count === 1 ? '' : 's') + ' from ' + q.errorQueue + ' (left parked).', 'ok');
      });
    }).catch(function (error) { status('Export failed: ' + error.message, 'error'); });
  }

  function fact(list, name, value) {
    if (value === undefined || value === null || value === '') return;
    list.appendChild(el('dt', { text: name }));
    list.appendChild(el('dd', { text: String(value) }));
  }
  function json(value) { try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); } }

  function openDetail(errorQueue, id) {
    return api('messages/' + encodeURIComponent(errorQueue) + '/' + encodeURIComponent(id)).then(function (item) {
      state.detail = item;
      var facts = $('detail-facts');
      clear(facts);
      fact(facts, 'Id', item.id);
      fact(facts, 'Queue', item.queue || '(unknown)');
      fact(facts, 'Parking queue', item.errorQueue);
      fact(facts, 'Reason', item.reason);
      fact(facts, 'Error', item.error);
      fact(facts, 'Parked at', item.parkedAt ? new Date(item.parkedAt).toLocaleString() : '');
      fact(facts, 'Attempts', item.attempts);
      fact(facts, 'Body encoding', item.bodyEncoding);
      $('detail-body').textContent = item.body;
      $('detail-properties').textContent = json(item.properties);
      $('detail-headers').textContent = json(item.headers);
      $('detail-deaths').textContent = item.deaths && item.deaths.length ? json(item.deaths) : 'None.';
      $('edit-area').hidden = true;
      $('detail-send-edit').hidden = true;
      $('detail-edit').hidden = item.bodyEncoding !== 'utf8';
      $('detail').showModal();
    }).catch(function (error) { status('Could not open the message: ' + error.message, 'error'); });
  }

  function closeDetail() { if ($('detail').open) $('detail').close(); }

  document.addEventListener('DOMContentLoaded', function () {
    $('refresh').addEventListener('click', function () { load(); });
    $('filter').addEventListener('submit', function (e) {
      e.preventDefault();
      var form = e.target.elements;
      var iso = function (v) { return v ? new Date(v).toISOString() : undefined; };
      applyFilter({ queue: form.errorQueue.value || undefined, reason: form.reason.value.trim() || undefined, error: form.error.value.trim() || undefined,
        text: form.text.value || undefined, since: iso(form.since.value), until: iso(form.until.value) });
    });
    $('clear-filter').addEventListener('click', function () { applyFilter({}); });
    $('prev').addEventListener('click', function () { state.offset = Math.max(0, state.offset - PAGE_SIZE); load(); });
    $('next').addEventListener('click', function () { state.offset += PAGE_SIZE; load(); });
    $('replay-selected').addEventListener('click', function () { bySelection('Replayed', 'replay'); });
    $('purge-selected').addEventListener('click', function () { bySelection('Purged', 'purge'); });
    $('replay-filtered').addEventListener('click', function () { byFilter('Replayed', 'replay'); });
    $('purge-filtered').addEventListener('click', function () { byFilter('Purged', 'purge'); });
    $('export-filtered').addEventListener('click', exportFiltered);
    $('detail-close').addEventListener('click', closeDetail);
    $('detail-replay').addEventListener('click', function () { var d = state.detail; closeDetail(); if (d) replayOne(d); });
    $('detail-purge').addEventListener('click', function () {
      var d = state.detail; closeDetail();
      if (d) act('purge', { errorQueue: d.errorQueue, ids: [d.id] }, 'Purged', 'Purge this message? It is deleted for good.');
    });
    $('detail-edit').addEventListener('click', function () {
      $('edit-body').value = state.detail ? state.detail.body : '';
      $('edit-area').hidden = false;
      $('detail-send-edit').hidden = false;
      $('edit-body').focus();
    });
    $('detail-send-edit').addEventListener('click', function () {
      var d = state.detail, body = $('edit-body').value;
      closeDetail();
      if (d) act('edit-and-replay', { errorQueue: d.errorQueue, id: d.id, body: body }, 'Replayed', 'Replay this message to ' + (d.queue || 'its queue') + ' with the corrected body (' + body.length + ' characters)?');
    });
    load();
  });
})();
`;
