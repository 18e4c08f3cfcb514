// The dashboard's page: static HTML, a vanilla script and a style sheet, held here as strings so
// that the plugin serves them as they are (no build step, nothing fetched from the internet). The
// script renders the server's view models (view-model.ts) with DOM calls, never innerHTML: a
// release's names and messages are text. The script is written without template literals, so it
// sits in this file's template strings unescaped.

const escapeAttribute = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/** The page, with the token its POSTs carry and whether it offers actions. */
export function pageHtml(token: string, readOnly: boolean): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="canary-l4-token" content="${escapeAttribute(token)}">
<meta name="canary-l4-read-only" content="${readOnly}">
<title>canary-l4 dashboard</title>
<link rel="stylesheet" href="/app.css">
</head>
<body>
<header><a href="#/" class="brand">canary-l4</a><span id="scope"></span><span id="live" role="status" aria-live="polite">connecting…</span></header>
<main id="main"></main>
<div id="notice" role="status" aria-live="polite"></div>
<dialog id="confirm" aria-labelledby="confirm-title">
<form method="dialog">
<h2 id="confirm-title"></h2>
<p id="confirm-effect"></p>
<p id="confirm-target-row" hidden><label for="confirm-target">Port and weight (SERVICE:PORT=N)</label> <input id="confirm-target" name="target" placeholder="web:80=25"></p>
<p id="confirm-reason-row" hidden><label for="confirm-reason">Reason (optional)</label> <input id="confirm-reason" name="reason"></p>
<menu><button type="button" id="confirm-cancel">Cancel</button> <button type="submit" id="confirm-ok" value="ok"></button></menu>
</form>
</dialog>
<script src="/app.js"></script>
</body>
</html>
`;
}

export const STYLE = `:root { color-scheme: light; font-family: system-ui, sans-serif; font-size: 14px; color: #1b1f24; background: #f6f7f9; }
body { margin: 0; }
header { display: flex; gap: 1em; align-items: center; padding: 0.6em 1.2em; background: #1f2d3d; color: #fff; }
header a.brand { color: #fff; font-weight: 700; text-decoration: none; font-size: 1.15em; }
#live { margin-left: auto; font-size: 0.9em; opacity: 0.85; }
main { padding: 1em 1.2em; }
h1 { font-size: 1.4em; margin: 0.2em 0 0.6em; }
h2 { font-size: 1.1em; margin: 1.2em 0 0.4em; }
table { border-collapse: collapse; background: #fff; min-width: 40%; }
th, td { border: 1px solid #d5d9de; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #eef1f4; font-weight: 600; }
.controls { display: flex; gap: 1em; align-items: center; margin-bottom: 0.8em; flex-wrap: wrap; }
.badge { display: inline-block; padding: 0.05em 0.5em; border-radius: 0.8em; font-size: 0.85em; background: #e3e7eb; }
.phase-Running { background: #d7ecff; } .phase-Holding { background: #ffe8b3; } .phase-Adopted { background: #d3f5d8; }
.phase-Deprecated, .phase-Deprecating { background: #ffd6d6; } .phase-Adopting { background: #e3f7d0; }
.verdict-Passed { color: #137333; } .verdict-Failed { color: #b3261e; font-weight: 600; } .verdict-Inconclusive { color: #8a5a00; }
.attention { color: #b3261e; }
ul.attention { margin: 0; padding-left: 1.2em; }
ol.steps { list-style: none; padding: 0; display: flex; gap: 0.5em; flex-wrap: wrap; }
ol.steps li { border: 1px solid #c2c8cf; border-radius: 0.4em; padding: 0.4em 0.7em; background: #fff; }
ol.steps li.done { background: #e6f4ea; } ol.steps li.current { border: 2px solid #1a73e8; background: #e8f0fe; }
ol.steps li.next { color: #5f6368; }
.actions { display: flex; gap: 0.6em; flex-wrap: wrap; margin: 0.6em 0; }
button { font: inherit; padding: 0.35em 0.9em; border: 1px solid #8a9199; border-radius: 0.3em; background: #fff; cursor: pointer; }
button:hover, button:focus-visible { background: #eef1f4; }
button.danger { border-color: #b3261e; color: #b3261e; }
.charts { display: flex; gap: 1em; flex-wrap: wrap; }
figure { margin: 0; background: #fff; border: 1px solid #d5d9de; padding: 0.5em; }
figcaption { font-weight: 600; margin-bottom: 0.3em; }
svg .configured { stroke: #5f6368; stroke-dasharray: 4 3; } svg .served { stroke: #1a73e8; } svg .achieved { stroke: #e37400; }
svg polyline { fill: none; stroke-width: 2; } svg .axis { stroke: #c2c8cf; stroke-width: 1; } svg text { font-size: 10px; fill: #5f6368; }
.legend span { margin-right: 1em; font-size: 0.85em; } .legend .configured { color: #5f6368; } .legend .served { color: #1a73e8; } .legend .achieved { color: #e37400; }
#notice { position: fixed; bottom: 1em; right: 1em; max-width: 40em; }
#notice:not(:empty) { background: #fff; border: 1px solid #8a9199; padding: 0.6em 0.9em; border-radius: 0.3em; }
#notice.error { border-color: #b3261e; color: #b3261e; }
dialog { border: 1px solid #8a9199; border-radius: 0.4em; max-width: 36em; }
menu { display: flex; gap: 0.6em; justify-content: flex-end; padding: 0; }
.muted { color: #5f6368; }
`;

export const SCRIPT = `'use strict';
(function () {
  var token = document.querySelector('meta[name="canary-l4-token"]').getAttribute('content');
  var readOnly = document.querySelector('meta[name="canary-l4-read-only"]').getAttribute('content') === 'true';
  var PHASES = ['Pending', 'Running', 'Holding', 'Adopting', 'Deprecating', 'Adopted', 'Deprecated'];
  var HISTORY_MAX = 360;
  var SAMPLE_MS = 5000;
  var state = { releases: [], namespace: null, search: '', phase: '', attention: false };
  var history = new Map();
  var main = document.getElementById('main');
  var listBody = null;
  var listCount = null;

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === undefined || value === null || value === false) return;
      if (key.indexOf('on') === 0) node.addEventListener(key.slice(2), value);
      else if (key === 'text') node.textContent = String(value);
      else node.setAttribute(key, value === true ? '' : String(value));
    });
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.append(child instanceof Node ? child : String(child));
  }
  function svg(tag, attrs) {
    var node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    Object.keys(attrs).forEach(function (key) { node.setAttribute(key, String(attrs[key])); });
    return node;
  }
  function percent(value) { return value === null || value === undefined ? '-' : value + '%'; }
  function portId(port) { return port.service + ':' + port.port + '/' + port.protocol; }
  function badge(phase) { return el('span', { class: 'badge phase-' + phase, text: phase }); }
  function table(headers, rows) {
    return el('table', {},
      el('thead', {}, el('tr', {}, headers.map(function (h) { return el('th', { scope: 'col', text: h }); }))),
      el('tbody', {}, rows.map(function (row) { return el('tr', {}, row.map(function (cell) { return el('td', {}, cell); })); })));
  }

  function record() {
    var now = Date.now();
    state.releases.forEach(function (release) {
      var ports = history.get(release.key);
      if (!ports) { ports = new Map(); history.set(release.key, ports); }
      release.ports.forEach(function (port) {
        var points = ports.get(portId(port));
        if (!points) { points = []; ports.set(portId(port), points); }
        points.push({ t: now, configured: port.configured, served: port.served, achieved: port.achieved });
        if (points.length > HISTORY_MAX) points.shift();
      });
    });
  }

  function route() {
    var match = /^#\\/release\\/([^/]+)\\/([^/]+)$/.exec(location.hash);
    return match ? { namespace: decodeURIComponent(match[1]), name: decodeURIComponent(match[2]) } : null;
  }

  function render() {
    var at = route();
    if (at) renderDetail(at); else renderList();
  }

  function matches(release) {
    var search = state.search.trim().toLowerCase();
    if (search && release.key.toLowerCase().indexOf(search) < 0) return false;
    if (state.phase && release.phase !== state.phase) return false;
    if (state.attention && release.attention.length === 0) return false;
    return true;
  }

  function buildList() {
    main.replaceChildren();
    listBody = el('tbody', {});
    listCount = el('span', { class: 'muted' });
    var phase = el('select', { id: 'phase-filter', onchange: function (e) { state.phase = e.target.value; fillList(); } },
      el('option', { value: '', text: 'every status' }),
      PHASES.map(function (p) { return el('option', { value: p, selected: state.phase === p, text: p }); }));
    main.append(
      el('h1', { text: 'Canary releases' }),
      el('div', { class: 'controls' },
        el('label', { for: 'search' }, 'Search '),
        el('input', { id: 'search', type: 'search', value: state.search, placeholder: 'namespace/name',
          oninput: function (e) { state.search = e.target.value; fillList(); } }),
        el('label', { for: 'phase-filter' }, 'Status '), phase,
        el('label', {}, el('input', { type: 'checkbox', id: 'attention-filter', checked: state.attention,
          onchange: function (e) { state.attention = e.target.checked; fillList(); } }), ' needs attention only'),
        listCount),
      el('table', { id: 'releases' },
        el('thead', {}, el('tr', {}, ['Release', 'Phase', 'Step', 'Split per port (configured / served / achieved canary)', 'Last verdict', 'Needs attention']
          .map(function (h) { return el('th', { scope: 'col', text: h }); }))),
        listBody));
  }

  function fillList() {
    var shown = state.releases.filter(matches);
    listCount.textContent = shown.length + ' of ' + state.releases.length;
    listBody.replaceChildren.apply(listBody, shown.map(function (release) {
      return el('tr', { 'data-release': release.key },
        el('td', {}, el('a', { href: '#/release/' + encodeURIComponent(release.namespace) + '/' + encodeURIComponent(release.name), text: release.key })),
        el('td', {}, badge(release.phase), release.paused ? el('span', { class: 'badge', text: 'paused' }) : null),
        el('td', { text: release.step }),
        el('td', {}, release.ports.length === 0 ? el('span', { class: 'muted', text: 'no port through the proxy' }) :
          release.ports.map(function (port) {
            return el('div', { text: portId(port) + ': ' + percent(port.configured) + ' / ' + percent(port.served) + ' / ' + percent(port.achieved) });
          })),
        el('td', { class: release.verdict ? 'verdict-' + release.verdict : 'muted', text: release.verdict || '-' }),
        el('td', {}, release.attention.length === 0 ? '' : el('ul', { class: 'attention' },
          release.attention.map(function (reason) { return el('li', { text: reason }); }))));
    }));
  }

  function renderList() {
    if (!listBody || !main.contains(listBody)) buildList();
    fillList();
  }

  function chart(key, port) {
    var points = (history.get(key) || new Map()).get(portId(port)) || [];
    var W = 420, H = 140, L = 30, B = 18;
    var box = svg('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img',
      'aria-label': 'Canary split of ' + portId(port) + ' over time: configured ' + percent(port.configured) + ', served ' + percent(port.served) + ', achieved ' + percent(port.achieved) });
    [0, 50, 100].forEach(function (v) {
      var y = (H - B) - (v / 100) * (H - B - 6);
      box.append(svg('line', { class: 'axis', x1: L, x2: W, y1: y, y2: y }));
      var label = svg('text', { x: 2, y: y + 3 }); label.textContent = v + '%'; box.append(label);
    });
    var t0 = points.length ? points[0].t : 0;
    var span = points.length > 1 ? points[points.length - 1].t - t0 : 1;
    ['configured', 'served', 'achieved'].forEach(function (series) {
      var coords = points.filter(function (p) { return p[series] !== null && p[series] !== undefined; }).map(function (p) {
        var x = L + (points.length > 1 ? ((p.t - t0) / span) * (W - L - 4) : (W - L) / 2);
        var y = (H - B) - (p[series] / 100) * (H - B - 6);
        return x.toFixed(1) + ',' + y.toFixed(1);
      });
      if (coords.length === 1) coords.push(coords[0].replace(/^[^,]+/, String(W - 4)));
      if (coords.length) box.append(svg('polyline', { class: series, points: coords.join(' ') }));
    });
    var secs = Math.round(span / 1000);
    var foot = svg('text', { x: L, y: H - 4 }); foot.textContent = points.length > 1 ? 'last ' + secs + 's (since this page opened)' : 'since this page opened';
    box.append(foot);
    return el('figure', {}, el('figcaption', { text: portId(port) }), box,
      el('div', { class: 'legend' }, el('span', { class: 'configured', text: '- - configured ' + percent(port.configured) }),
        el('span', { class: 'served', text: '— served ' + percent(port.served) }), el('span', { class: 'achieved', text: '— achieved ' + percent(port.achieved) })));
  }

  var eventsFor = { key: null, items: [], at: 0 };
  function loadEvents(release) {
    if (eventsFor.key === release.key && Date.now() - eventsFor.at < 2000) return;
    eventsFor = { key: release.key, items: eventsFor.key === release.key ? eventsFor.items : [], at: Date.now() };
    fetch('/api/releases/' + encodeURIComponent(release.namespace) + '/' + encodeURIComponent(release.name) + '/events')
      .then(function (r) { return r.json(); })
      .then(function (items) {
        if (!Array.isArray(items)) return;
        eventsFor.items = items;
        var box = document.getElementById('events');
        if (box && route()) box.replaceChildren(eventsTable(items));
      }, function () {});
  }
  function eventsTable(items) {
    if (items.length === 0) return el('p', { class: 'muted', text: 'No Events.' });
    return table(['Type', 'Reason', 'Message', 'Count', 'Last seen'], items.map(function (e) { return [e.type, e.reason, e.message, String(e.count), e.last]; }));
  }

  function renderDetail(at) {
    listBody = null;
    var key = at.namespace + '/' + at.name;
    var release = state.releases.find(function (r) { return r.key === key; });
    if (!release) {
      main.replaceChildren(el('p', {}, el('a', { href: '#/', text: '← all releases' })), el('h1', { text: key }), el('p', { text: 'No such CanaryRelease (deleted, or not watched).' }));
      return;
    }
    var parts = [
      el('p', {}, el('a', { href: '#/', text: '← all releases' })),
      el('h1', {}, 'CanaryRelease ' + release.key + ' ', badge(release.phase), release.paused ? el('span', { class: 'badge', id: 'paused-badge', text: 'paused' }) : null),
      el('p', {}, 'Step ' + release.step + (release.pauseReason ? ' · held: ' + release.pauseReason : '') + (release.transition ? ' · transition ' + release.transition : '')),
    ];
    if (release.attention.length) parts.push(el('h2', { text: 'Needs attention' }), el('ul', { class: 'attention' }, release.attention.map(function (r) { return el('li', { text: r }); })));
    if (!readOnly && release.actions.length) {
      parts.push(el('div', { class: 'actions', role: 'group', 'aria-label': 'Actions' }, release.actions.map(function (action) {
        return el('button', { type: 'button', class: action.action === 'abort' ? 'danger' : null, 'data-action': action.action,
          onclick: function () { confirmAction(release, action); }, text: action.label });
      })));
    }
    if (release.steps.length) {
      parts.push(el('h2', { text: 'Steps' }), el('ol', { class: 'steps' }, release.steps.map(function (step) {
        return el('li', { class: step.state, 'aria-current': step.state === 'current' ? 'step' : null },
          el('strong', { text: 'Step ' + step.number + ' ' }), step.weight + '%' + (step.mirror !== null ? ' mirror ' + step.mirror + '%' : ''),
          step.pause ? ' · pause ' + step.pause : ' · no pause', step.gate ? ' · analysis gate' : '', el('div', { class: 'muted', text: step.state }));
      })));
    }
    parts.push(el('h2', { text: 'Split per Service port' }));
    if (release.ports.length === 0) parts.push(el('p', { class: 'muted', text: 'No port through the proxy (not taken over yet, or handed back).' }));
    else parts.push(table(['Port', 'Configured', 'Served', 'Achieved canary'], release.ports.map(function (p) { return [portId(p), percent(p.configured), percent(p.served), percent(p.achieved)]; })),
      el('div', { class: 'charts' }, release.ports.map(function (p) { return chart(release.key, p); })));
    if (release.analysis) {
      var a = release.analysis;
      parts.push(el('h2', { text: 'Analysis' }), el('p', {}, el('span', { class: 'verdict-' + a.verdict, text: a.verdict }), ' at ' + a.at + (a.confidence !== null ? ' · confidence ' + Math.round(a.confidence * 1000) / 10 + '%' : '') + ': ' + a.message));
      if (a.signals.length) parts.push(table(['Signal', 'Canary', 'Stable', 'Threshold', 'Verdict'], a.signals.map(function (s) { return [s.name, s.canary, s.stable, s.threshold, el('span', { class: 'verdict-' + s.verdict, text: s.verdict })]; })));
    }
    if (release.mirrors.length) parts.push(el('h2', { text: 'Mirrored to the canary' }), table(['Port', 'Mirrored', 'Compared', 'Equal', 'Different', 'Missing', 'Dropped'],
      release.mirrors.map(function (m) { return [m.service + ':' + m.port + '/' + m.protocol, String(m.mirrored), String(m.compared), String(m.equal), String(m.different), String(m.missing), String(m.dropped)]; })));
    parts.push(el('h2', { text: 'Conditions' }), release.conditions.length === 0 ? el('p', { class: 'muted', text: 'None yet.' }) :
      table(['Type', 'Status', 'Reason', 'Message', 'Since'], release.conditions.map(function (c) { return [c.type, c.status, c.reason, c.message, c.lastTransitionTime]; })));
    parts.push(el('h2', { text: 'Events' }), el('div', { id: 'events' }, eventsFor.key === release.key ? eventsTable(eventsFor.items) : el('p', { class: 'muted', text: 'Loading…' })));
    main.replaceChildren.apply(main, parts);
    loadEvents(release);
  }

  var dialog = document.getElementById('confirm');
  var pending = null;
  function confirmAction(release, action) {
    pending = { release: release, action: action };
    document.getElementById('confirm-title').textContent = action.label + ' ' + release.key + '?';
    document.getElementById('confirm-effect').textContent = 'This ' + (action.action === 'set-weight' ? action.effect : 'does: ' + action.effect) + '.';
    document.getElementById('confirm-target-row').hidden = action.action !== 'set-weight';
    document.getElementById('confirm-reason-row').hidden = action.action !== 'abort';
    document.getElementById('confirm-ok').textContent = 'Confirm: ' + action.label;
    dialog.showModal();
  }
  document.getElementById('confirm-cancel').addEventListener('click', function () { pending = null; dialog.close(); });
  dialog.addEventListener('close', function () {
    var chosen = pending;
    pending = null;
    if (!chosen || dialog.returnValue !== 'ok') return;
    dialog.returnValue = '';
    var body = {};
    if (chosen.action.action === 'set-weight') body.target = document.getElementById('confirm-target').value;
    if (chosen.action.action === 'abort') body.reason = document.getElementById('confirm-reason').value;
    var r = chosen.release;
    fetch('/api/releases/' + encodeURIComponent(r.namespace) + '/' + encodeURIComponent(r.name) + '/' + chosen.action.action, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-canary-l4-token': token }, body: JSON.stringify(body),
    }).then(function (response) {
      return response.json().then(function (answer) { notice(response.ok ? answer.summary : answer.error, !response.ok); });
    }, function (err) { notice('The dashboard did not answer: ' + err.message, true); });
  });

  var notices = document.getElementById('notice');
  function notice(text, error) { notices.className = error ? 'error' : ''; notices.textContent = text; }

  var live = document.getElementById('live');
  var stream = new EventSource('/api/events');
  stream.addEventListener('releases', function (event) {
    var data = JSON.parse(event.data);
    state.releases = data.releases;
    document.getElementById('scope').textContent = (data.namespace === null ? 'all namespaces' : 'namespace ' + data.namespace) + (data.readOnly ? ' · read-only' : '');
    record();
    live.textContent = 'live · updated ' + new Date().toLocaleTimeString();
    render();
  });
  stream.addEventListener('error', function () { live.textContent = 'reconnecting…'; });
  setInterval(function () { record(); if (route()) render(); }, SAMPLE_MS);
  window.addEventListener('hashchange', render);
})();
`;
