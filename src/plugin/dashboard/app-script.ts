// The dashboard's app, as a vanilla script served at /app.js (a string: no build step, nothing
// fetched from the internet). It renders the server's view models (view-model.ts) with DOM calls,
// never innerHTML: a release's names and messages are text. A release's page draws its story
// (story.ts, fetched again whenever the release changes) with /charts.js. Every time is shown in
// the browser's local time, in one format. Written without template literals, so it sits in this
// file's template string unescaped.

/** The list, a release's page, the actions and the live updates. */
export const SCRIPT = `'use strict';
(function () {
  var token = document.querySelector('meta[name="canary-l4-token"]').getAttribute('content');
  var readOnly = document.querySelector('meta[name="canary-l4-read-only"]').getAttribute('content') === 'true';
  var PHASES = ['Pending', 'Running', 'Holding', 'Adopting', 'Deprecating', 'Adopted', 'Deprecated'];
  var charts = window.canaryL4Charts;
  var state = { releases: [], namespace: null, search: '', phase: '', attention: false };
  var story = { key: null, version: null, data: null };
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

  function percent(value) { return value === null || value === undefined ? '-' : value + '%'; }
  function thisStep(port) { return port.thisStep === null ? 'none yet' : port.thisStep.percent + '% (' + port.thisStep.canary + ' of ' + port.thisStep.of + ')'; }
  /** The canary's achieved share: with steps, this step's beside the release's, wherever a share is shown. */
  function achieved(release, port) {
    var since = percent(port.achieved) + ' since the release began';
    return release.step === '-' ? since : thisStep(port) + ' this step · ' + since;
  }
  function portId(port) { return port.service + ':' + port.port + '/' + port.protocol; }
  function badge(phase) { return el('span', { class: 'badge phase-' + phase, text: phase }); }
  function table(headers, rows) {
    return el('table', {},
      el('thead', {}, el('tr', {}, headers.map(function (h) { return el('th', { scope: 'col', text: h }); }))),
      el('tbody', {}, rows.map(function (row) { return el('tr', {}, row.map(function (cell) { return el('td', {}, cell); })); })));
  }

  function pad(n) { return (n < 10 ? '0' : '') + n; }
  /** Every time the page shows, in the browser's local time: 2026-12-05 14:03:09 (short: 14:03:09). */
  function formatTime(iso, short) {
    var d = new Date(iso);
    if (isNaN(d.getTime())) return iso || '-';
    var clock = pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
    return short ? clock : d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + clock;
  }
  function timeEl(iso) { return el('time', { datetime: iso, text: formatTime(iso) }); }
  var ISO = new RegExp('\\\\d{4}-\\\\d{2}-\\\\d{2}T\\\\d{2}:\\\\d{2}:\\\\d{2}(\\\\.\\\\d+)?Z', 'g');
  /** A message of the cluster with its RFC 3339 times in local time, as every other time on the page. */
  function localText(text) { return String(text).replace(ISO, function (iso) { return formatTime(iso); }); }
  function zoneName() {
    var offset = -new Date().getTimezoneOffset();
    var zone = (Intl.DateTimeFormat().resolvedOptions().timeZone || '');
    return 'times in ' + (zone ? zone + ', ' : '') + 'UTC' + (offset < 0 ? '-' : '+') + pad(Math.floor(Math.abs(offset) / 60)) + ':' + pad(Math.abs(offset) % 60);
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
        el('thead', {}, el('tr', {}, ['Release', 'Phase', 'Step', 'Canary share per port: configured / served / achieved', 'Last verdict', 'Needs attention']
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
            return el('div', { class: 'split' }, portId(port) + ': ' + percent(port.configured) + ' / ' + percent(port.served) + ' / ', el('small', { text: achieved(release, port) }));
          })),
        el('td', { class: release.verdict ? 'verdict-' + release.verdict : 'muted', text: release.verdict || '-' }),
        el('td', {}, release.attention.length === 0 ? '' : el('ul', { class: 'attention' },
          release.attention.map(function (reason) { return el('li', { text: localText(reason) }); }))));
    }));
  }

  function renderList() {
    if (!listBody || !main.contains(listBody)) buildList();
    fillList();
  }

  function swatch(kind, text) { return el('span', {}, el('span', { class: 'swatch ' + kind }), text); }
  /** The release's story since it began: the weight with its steps, holds and transition, each interval's verdict and signals, in words. */
  function storySection(release) {
    var data = story.key === release.key ? story.data : null;
    if (!data) return [el('p', { class: 'muted', id: 'story-empty', text: story.key === release.key && story.version !== null ? 'No history yet: the proxy writes it with the status (status.history).' : 'Loading…' })];
    var holdKinds = {};
    data.holds.forEach(function (hold) { holdKinds[hold.kind] = true; });
    var parts = [el('figure', { class: 'wide' },
      el('figcaption', {}, 'Canary weight since the release began ', el('span', { class: 'muted', text: '(' + formatTime(data.from) + ' to ' + formatTime(data.to) + ')' })),
      charts.weightChart(data, formatTime, localText),
      data.verdicts.length ? charts.verdictStrip(data, formatTime) : null,
      el('div', { class: 'legend' },
        data.weights.map(function (series) { return swatch('served', 'served weight ' + series.port); }),
        data.shares.some(function (series) { return series.points.length; }) ? swatch('share', 'achieved canary share of each interval') : null,
        Object.keys(holdKinds).map(function (kind) { return swatch(kind, charts.HOLD_LABELS[kind]); }),
        data.transition ? swatch('transition', data.transition.reason === 'AnalysisFailed' ? 'rolled back' : data.transition.type) : null,
        data.verdicts.length ? [swatch('Passed', 'interval passed'), swatch('Inconclusive', 'inconclusive'), swatch('Failed', 'failed')] : null))];
    if (data.transition) parts.push(el('p', { class: data.transition.reason === 'AnalysisFailed' ? 'attention' : '', id: 'transition-cause' },
      (data.transition.reason === 'AnalysisFailed' ? 'Rolled back at ' : data.transition.type + ' (' + data.transition.reason + ') at ') + formatTime(data.transition.at) + ': ' + localText(data.transition.message)));
    if (data.signals.length) parts.push(el('h3', { text: 'Each interval judged: canary against stable and the threshold' }),
      el('div', { class: 'charts' }, charts.signalCharts(data, formatTime).map(function (item) {
        return el('figure', {}, el('figcaption', {}, item.name + ' ', el('span', { class: 'muted', text: item.threshold })), item.chart,
          el('div', { class: 'legend' }, swatch('canary', 'canary'), swatch('stable', 'stable'), swatch('limit', 'threshold')));
      })));
    parts.push(el('h3', { text: 'What happened' }), el('ol', { class: 'timeline' }, data.events.slice().reverse().map(function (event) {
      return el('li', { class: event.kind }, el('span', { class: 'time', text: formatTime(event.at) }), localText(event.text));
    })));
    return parts;
  }
  function loadStory(release) {
    if (story.key === release.key && story.version === release.version) return;
    var wanted = { key: release.key, version: release.version };
    if (story.key !== release.key) story = { key: release.key, version: null, data: null };
    fetch('/api/releases/' + encodeURIComponent(release.namespace) + '/' + encodeURIComponent(release.name) + '/story')
      .then(function (r) { return r.json(); })
      .then(function (data) {
        if (story.key !== wanted.key) return;
        story = { key: wanted.key, version: wanted.version, data: data && data.from ? data : null };
        if (route()) render();
      }, function () {});
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
    return table(['Type', 'Reason', 'Message', 'Count', 'Last seen'], items.map(function (e) { return [e.type, e.reason, localText(e.message), String(e.count), timeEl(e.last)]; }));
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
      el('p', { id: 'standing' }, release.step === '-' ? 'No steps' : 'Step ' + release.step,
        release.pause ? [' · held: ' + localText(release.pause.reason) + ', since ', timeEl(release.pause.since)] : null,
        release.transition ? ' · transition ' + localText(release.transition) : null),
    ];
    if (release.attention.length) parts.push(el('h2', { text: 'Needs attention' }), el('ul', { class: 'attention' }, release.attention.map(function (r) { return el('li', { text: localText(r) }); })));
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
    parts.push(el('h2', { text: 'Since the release began' }), el('div', { id: 'story' }, storySection(release)));
    parts.push(el('h2', { text: 'Canary share per Service port' }));
    if (release.ports.length === 0) parts.push(el('p', { class: 'muted', text: 'No port through the proxy (not taken over yet, or handed back).' }));
    else parts.push(table(['Port', 'Configured', 'Served'].concat(release.step === '-' ? [] : ['Achieved this step']).concat(['Achieved since the release began']),
      release.ports.map(function (p) { return [portId(p), percent(p.configured), percent(p.served)].concat(release.step === '-' ? [] : [thisStep(p)]).concat([percent(p.achieved)]); })));
    if (release.analysis) {
      var a = release.analysis;
      parts.push(el('h2', { text: 'Last analysis interval' }), el('p', {}, el('span', { class: 'verdict-' + a.verdict, text: a.verdict }), ' at ', timeEl(a.at), (a.confidence !== null ? ' · confidence ' + Math.round(a.confidence * 1000) / 10 + '%' : '') + ': ' + localText(a.message)));
      if (a.signals.length) parts.push(table(['Signal', 'Canary', 'Stable', 'Threshold', 'Verdict'], a.signals.map(function (s) { return [s.name, s.canary, s.stable, s.threshold, el('span', { class: 'verdict-' + s.verdict, text: s.verdict })]; })));
    }
    if (release.mirrors.length) parts.push(el('h2', { text: 'Mirrored to the canary' }), table(['Port', 'Mirrored', 'Compared', 'Equal', 'Different', 'Missing', 'Dropped'],
      release.mirrors.map(function (m) { return [m.service + ':' + m.port + '/' + m.protocol, String(m.mirrored), String(m.compared), String(m.equal), String(m.different), String(m.missing), String(m.dropped)]; })));
    parts.push(el('h2', { text: 'Conditions' }), release.conditions.length === 0 ? el('p', { class: 'muted', text: 'None yet.' }) :
      table(['Type', 'Status', 'Reason', 'Message', 'Since'], release.conditions.map(function (c) { return [c.type, c.status, c.reason, localText(c.message), timeEl(c.lastTransitionTime)]; })));
    parts.push(el('h2', { text: 'Events' }), el('div', { id: 'events' }, eventsFor.key === release.key ? eventsTable(eventsFor.items) : el('p', { class: 'muted', text: 'Loading…' })));
    main.replaceChildren.apply(main, parts);
    loadEvents(release);
    loadStory(release);
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
    live.textContent = 'live · updated ' + formatTime(new Date().toISOString(), true);
    render();
  });
  stream.addEventListener('error', function () { live.textContent = 'reconnecting…'; });
  document.getElementById('zone').textContent = zoneName();
  window.addEventListener('hashchange', render);
})();
`;
