// The release page's charts, as a vanilla script served at /charts.js (a string, as page.ts's
// script: no build step). It draws a release's story (story.ts) as SVG: the served weight of each
// port over time with the steps, holds and transition marked and each interval's achieved share;
// each interval's verdict; each signal's canary and stable figures against the threshold. Every
// drawn series carries its data (data-points, data-at) so a test can read what the chart shows.
// Written without template literals, so it sits in this file's template string unescaped.

/**
 * Defines window.canaryL4Charts: weightChart(story, time, text), verdictStrip(story, time),
 * signalCharts(story, time); `time` formats an RFC 3339 time as the page does, `text` localizes a message's.
 */
export const CHARTS_SCRIPT = `'use strict';
(function () {
  var NS = 'http://www.w3.org/2000/svg';
  var HOLD_LABELS = { paused: 'paused by a person', promotion: 'awaiting promotion', analysis: 'awaiting a passing interval', timed: 'timed pause', other: 'held' };
  function svg(tag, attrs, text) {
    var node = document.createElementNS(NS, tag);
    Object.keys(attrs).forEach(function (key) { if (attrs[key] !== null && attrs[key] !== undefined) node.setAttribute(key, String(attrs[key])); });
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function title(node, text) { node.append(svg('title', {}, text)); return node; }
  function timeScale(from, to, left, right) {
    var t0 = Date.parse(from), t1 = Math.max(Date.parse(to), t0 + 1000);
    return function (at) { return left + ((Date.parse(at) - t0) / (t1 - t0)) * (right - left); };
  }
  function timeTicks(box, from, to, x, y, time, ticks) {
    var t0 = Date.parse(from), t1 = Math.max(Date.parse(to), t0 + 1000);
    for (var i = 0; i < ticks; i++) {
      var at = new Date(t0 + ((t1 - t0) * i) / (ticks - 1)).toISOString();
      var anchor = i === 0 ? 'start' : i === ticks - 1 ? 'end' : 'middle';
      box.append(svg('text', { x: x(at), y: y, 'text-anchor': anchor, class: 'tick' }, time(at, true)));
    }
  }

  /** The served weight of each port (a step line), each interval's achieved share (dots), steps, holds, transition. */
  function weightChart(story, time, text) {
    var W = 1000, H = 260, L = 56, R = 990, T = 18, B = 222;
    var x = timeScale(story.from, story.to, L, R);
    var y = function (percent) { return B - (percent / 100) * (B - T); };
    var box = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'story', role: 'img', 'data-chart': 'weights',
      'aria-label': 'Canary weight over time since the release began, with its steps, holds and transition' });
    story.holds.forEach(function (hold) {
      var x0 = x(hold.from), x1 = Math.max(x(hold.to), x0 + 1);
      box.append(title(svg('rect', { class: 'hold hold-' + hold.kind, x: x0, y: T, width: x1 - x0, height: B - T,
        'data-kind': hold.kind, 'data-from': hold.from, 'data-to': hold.to }), HOLD_LABELS[hold.kind] + ': ' + text(hold.reason)));
    });
    [0, 25, 50, 75, 100].forEach(function (v) {
      box.append(svg('line', { class: 'axis', x1: L, x2: R, y1: y(v), y2: y(v) }));
      box.append(svg('text', { x: L - 4, y: y(v) + 3, 'text-anchor': 'end', class: 'tick' }, v + '%'));
    });
    story.steps.forEach(function (step) {
      var sx = x(step.at);
      box.append(svg('line', { class: 'step-mark', x1: sx, x2: sx, y1: T - 4, y2: B, 'data-step': step.label, 'data-at': step.at }));
      box.append(svg('text', { x: sx + 3, y: T - 6, class: 'step-label' }, step.label + (step.promoted ? ' · promoted' : '')));
    });
    story.weights.forEach(function (series, index) {
      var coords = [];
      series.points.forEach(function (point, i) {
        if (i > 0) coords.push(x(point.at).toFixed(1) + ',' + y(series.points[i - 1].value).toFixed(1));
        coords.push(x(point.at).toFixed(1) + ',' + y(point.value).toFixed(1));
      });
      var last = series.points[series.points.length - 1];
      if (last) coords.push(x(story.to).toFixed(1) + ',' + y(last.value).toFixed(1));
      box.append(svg('polyline', { class: 'served port-' + index, points: coords.join(' '), 'data-port': series.port,
        'data-points': JSON.stringify(series.points.map(function (p) { return [p.at, p.value]; })) }));
    });
    story.shares.forEach(function (series, index) {
      series.points.forEach(function (point) {
        box.append(title(svg('circle', { class: 'share port-' + index, cx: x(point.at), cy: y(point.value), r: 3,
          'data-port': series.port, 'data-at': point.at, 'data-value': point.value }),
          series.port + ' at ' + time(point.at) + ': canary ' + point.value + '% of ' + point.of + ' new connections/flows'));
      });
    });
    if (story.transition) {
      var tx = x(story.transition.at);
      box.append(title(svg('line', { class: 'transition', x1: tx, x2: tx, y1: T - 4, y2: B, 'data-at': story.transition.at }),
        story.transition.type + ' (' + story.transition.reason + '): ' + text(story.transition.message)));
      box.append(svg('text', { x: tx - 3, y: B - 6, 'text-anchor': 'end', class: 'transition-label' },
        story.transition.reason === 'AnalysisFailed' ? 'rolled back' : story.transition.type));
    }
    timeTicks(box, story.from, story.to, x, H - 22, time, 5);
    return box;
  }

  /** One cell per judged interval, coloured by its verdict, on the weight chart's time axis. */
  function verdictStrip(story, time) {
    var W = 1000, H = 26, L = 56, R = 990;
    var x = timeScale(story.from, story.to, L, R);
    var box = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'story', role: 'img', 'data-chart': 'verdicts',
      'aria-label': 'The verdict of each analysis interval' });
    box.append(svg('text', { x: L - 4, y: 16, 'text-anchor': 'end', class: 'tick' }, 'verdict'));
    story.verdicts.forEach(function (item) {
      var x1 = x(item.at), x0 = Math.max(L, x(new Date(Date.parse(item.at) - item.intervalMs).toISOString()));
      box.append(title(svg('rect', { class: 'verdict-cell verdict-' + item.verdict, x: x0, y: 4, width: Math.max(2, x1 - x0 - 1), height: 16,
        'data-at': item.at, 'data-verdict': item.verdict }), time(item.at) + ': ' + item.verdict));
    });
    return box;
  }

  /** Per signal: the canary's and the stable's figure at each interval, the threshold's line, each verdict. */
  function signalCharts(story, time) {
    return story.signals.map(function (signal) {
      var W = 330, H = 170, L = 46, R = 322, T = 10, B = 140;
      var x = timeScale(story.from, story.to, L, R);
      var values = [];
      signal.points.forEach(function (p) { if (p.canary !== null) values.push(p.canary); if (p.stable !== null) values.push(p.stable); });
      if (signal.limit !== null) values.push(signal.limit);
      var top = Math.max.apply(null, values.concat([0])) * 1.15 || 1;
      var y = function (v) { return B - (v / top) * (B - T); };
      var box = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'signal', role: 'img', 'data-signal': signal.name,
        'aria-label': signal.name + ': canary and stable per interval against ' + signal.threshold });
      [0, top / 2, top].forEach(function (v) {
        box.append(svg('line', { class: 'axis', x1: L, x2: R, y1: y(v), y2: y(v) }));
        box.append(svg('text', { x: L - 4, y: y(v) + 3, 'text-anchor': 'end', class: 'tick' }, String(Math.round(v * 10000) / 10000)));
      });
      if (signal.limit !== null)
        box.append(svg('line', { class: 'limit', x1: L, x2: R, y1: y(signal.limit), y2: y(signal.limit), 'data-limit': signal.limit }));
      ['stable', 'canary'].forEach(function (side) {
        var points = signal.points.filter(function (p) { return p[side] !== null; });
        box.append(svg('polyline', { class: 'side-' + side, 'data-side': side,
          points: points.map(function (p) { return x(p.at).toFixed(1) + ',' + y(p[side]).toFixed(1); }).join(' '),
          'data-points': JSON.stringify(points.map(function (p) { return [p.at, p[side]]; })) }));
      });
      signal.points.forEach(function (p) {
        if (p.canary === null) return;
        box.append(title(svg('circle', { class: 'verdict-dot verdict-' + p.verdict, cx: x(p.at), cy: y(p.canary), r: 3.5,
          'data-at': p.at, 'data-verdict': p.verdict }),
          time(p.at) + ': canary ' + p.canary + ', stable ' + (p.stable === null ? '-' : p.stable) + ': ' + p.verdict));
      });
      timeTicks(box, story.from, story.to, x, H - 8, time, 3);
      return { name: signal.name, threshold: signal.threshold, chart: box };
    });
  }

  window.canaryL4Charts = { weightChart: weightChart, verdictStrip: verdictStrip, signalCharts: signalCharts, HOLD_LABELS: HOLD_LABELS };
})();
`;
