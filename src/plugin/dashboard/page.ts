// The dashboard's page: its static HTML and its style sheet, held here as strings so that the
// plugin serves them as they are (no build step, nothing fetched from the internet). Its scripts
// are app-script.ts and charts-script.ts.

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
<header><a href="#/" class="brand">canary-l4</a><span id="scope"></span><span id="zone"></span><span id="live" role="status" aria-live="polite">connecting…</span></header>
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
<script src="/charts.js"></script>
<script src="/app.js"></script>
</body>
</html>
`;
}

export const STYLE = `:root { color-scheme: light; font-family: system-ui, sans-serif; font-size: 14px; color: #1b1f24; background: #f6f7f9; }
body { margin: 0; }
header { display: flex; gap: 1em; align-items: center; padding: 0.6em 1.2em; background: #1f2d3d; color: #fff; }
header a.brand { color: #fff; font-weight: 700; text-decoration: none; font-size: 1.15em; }
#live { margin-left: auto; font-size: 0.9em; opacity: 0.85; } #zone { font-size: 0.9em; opacity: 0.85; }
time, .time { white-space: nowrap; font-variant-numeric: tabular-nums; }
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
figure { margin: 0 0 0.8em; background: #fff; border: 1px solid #d5d9de; padding: 0.5em 0.7em; }
figure.wide { max-width: 1100px; } figure.wide svg { width: 100%; height: auto; display: block; }
figcaption { font-weight: 600; margin-bottom: 0.3em; } figcaption .muted { font-weight: 400; }
svg.signal { width: 330px; height: 170px; display: block; }
#releases td:nth-child(-n+3) { white-space: nowrap; }
svg polyline { fill: none; stroke-width: 2; } svg .axis { stroke: #e3e7eb; stroke-width: 1; } svg text { font-size: 11px; fill: #5f6368; }
svg .served { stroke: #1a73e8; stroke-width: 2.5; } svg .served.port-1 { stroke: #8430ce; } svg .served.port-2 { stroke: #007b83; }
svg .share { fill: #e37400; } svg .share.port-1 { fill: #c5221f; } svg .share.port-2 { fill: #5f6368; }
svg .hold { opacity: 0.55; } svg .hold-paused { fill: #fbbc04; } svg .hold-promotion { fill: #aecbfa; } svg .hold-analysis { fill: #dadce0; }
svg .hold-timed { fill: #f1f3f4; } svg .hold-other { fill: #fde293; }
svg .step-mark { stroke: #1f2d3d; stroke-width: 1; stroke-dasharray: 3 3; } svg .step-label { fill: #1f2d3d; font-weight: 600; }
svg .transition { stroke: #b3261e; stroke-width: 2; } svg .transition-label { fill: #b3261e; font-weight: 600; }
svg .verdict-cell.verdict-Passed, svg .verdict-dot.verdict-Passed { fill: #34a853; } svg .verdict-cell.verdict-Failed, svg .verdict-dot.verdict-Failed { fill: #d93025; }
svg .verdict-cell.verdict-Inconclusive, svg .verdict-dot.verdict-Inconclusive { fill: #c9ced6; }
svg .side-canary { stroke: #e37400; } svg .side-stable { stroke: #80868b; stroke-dasharray: 4 3; } svg .limit { stroke: #d93025; stroke-width: 1.5; stroke-dasharray: 6 3; }
.legend { display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; font-size: 0.85em; margin-top: 0.3em; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; border-radius: 0.15em; vertical-align: -0.1em; margin-right: 0.3em; }
.swatch.served { background: #1a73e8; } .swatch.share { background: #e37400; border-radius: 50%; } .swatch.paused { background: #fbbc04; }
.swatch.promotion { background: #aecbfa; } .swatch.analysis { background: #dadce0; } .swatch.timed { background: #f1f3f4; border: 1px solid #dadce0; }
.swatch.transition { background: #b3261e; width: 0.25em; } .swatch.canary { background: #e37400; } .swatch.stable { background: #80868b; }
.swatch.limit { background: #d93025; height: 0.2em; vertical-align: 0.2em; } .swatch.Passed { background: #34a853; }
.swatch.Failed { background: #d93025; } .swatch.Inconclusive { background: #c9ced6; }
ol.timeline { list-style: none; padding: 0; margin: 0.3em 0; max-width: 1100px; }
ol.timeline li { padding: 0.15em 0; border-bottom: 1px solid #eef1f4; } ol.timeline .time { color: #5f6368; margin-right: 0.8em; }
ol.timeline li.transition { color: #b3261e; font-weight: 600; } ol.timeline li.step { font-weight: 600; }
.split small { color: #5f6368; }
#notice { position: fixed; bottom: 1em; right: 1em; max-width: 40em; }
#notice:not(:empty) { background: #fff; border: 1px solid #8a9199; padding: 0.6em 0.9em; border-radius: 0.3em; }
#notice.error { border-color: #b3261e; color: #b3261e; }
dialog { border: 1px solid #8a9199; border-radius: 0.4em; max-width: 36em; }
menu { display: flex; gap: 0.6em; justify-content: flex-end; padding: 0; }
.muted { color: #5f6368; }
`;
