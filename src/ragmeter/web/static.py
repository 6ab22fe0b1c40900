"""The UI's one stylesheet and one script, served by the app itself (``/static/...``): no CDN,
no inline script (the Content-Security-Policy allows scripts and styles from the app only).

Colours meet WCAG AA (4.5:1 or more for text) in the light and the dark scheme. The script
only enhances: every page works without it, and it writes text with ``textContent`` only.
"""

from __future__ import annotations

STYLE_CSS = """
:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1a1a1a; --muted: #4f4f4f; --line: #c8c8c8; --panel: #f4f5f7;
  --link: #0b57d0; --bad: #a50e0e; --good: #0d652d; --warn: #7a4b00;
  --mark: #ffe08a; --mark-fg: #1a1a1a; --leak: #ffc9c9; --leak-fg: #1a1a1a;
  --bar: #3b6fd8; --focus: #0b57d0; --gold: #0d652d;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #121417; --fg: #e8e8e8; --muted: #b4b8bf; --line: #3d4148; --panel: #1c1f24;
    --link: #8ab4f8; --bad: #f2b8b5; --good: #81c995; --warn: #fdd663;
    --mark: #6b5200; --mark-fg: #ffffff; --leak: #7a1f1f; --leak-fg: #ffffff;
    --bar: #8ab4f8; --focus: #8ab4f8; --gold: #81c995;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header.top { display: flex; gap: 1.5rem; align-items: baseline; padding: .6rem 1.2rem;
  border-bottom: 1px solid var(--line); background: var(--panel); }
header.top .brand { font-weight: 700; color: var(--fg); text-decoration: none; }
main { padding: 1rem 1.2rem 3rem; max-width: 1400px; }
a { color: var(--link); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible,
summary:focus-visible, [tabindex]:focus-visible {
  outline: 3px solid var(--focus); outline-offset: 2px; }
h1 { font-size: 1.5rem; margin: .2rem 0 .6rem; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin: 1.6rem 0 .5rem; }
h3 { font-size: 1rem; margin: 1rem 0 .4rem; }
.muted { color: var(--muted); }
.bad { color: var(--bad); font-weight: 600; }
.good { color: var(--good); font-weight: 600; }
.warn { color: var(--warn); font-weight: 600; }
table { border-collapse: collapse; margin: .3rem 0 1rem; }
th, td { border-bottom: 1px solid var(--line); padding: .25rem .6rem; text-align: left;
  vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.text { max-width: 44rem; overflow-wrap: anywhere; }
tbody tr:hover { background: var(--panel); }
form.filters { display: flex; flex-wrap: wrap; gap: .8rem; align-items: end;
  margin: .5rem 0 1rem; }
form.filters label { display: flex; flex-direction: column; font-size: .85rem;
  color: var(--muted); }
input, select, button { font: inherit; color: var(--fg); background: var(--bg);
  border: 1px solid var(--muted); border-radius: 4px; padding: .25rem .45rem; }
button { cursor: pointer; background: var(--panel); }
button:disabled { cursor: not-allowed; color: var(--muted); }
.pager { display: flex; gap: 1rem; align-items: center; margin: .5rem 0; }
.cards { display: flex; flex-wrap: wrap; gap: .8rem; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .8rem;
  background: var(--panel); }
.card .value { font-size: 1.3rem; font-weight: 700; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem;
  margin: .4rem 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; white-space: pre-wrap; }
.box { border: 1px solid var(--line); border-radius: 6px; padding: .6rem .8rem;
  margin: .3rem 0 .8rem;
  white-space: pre-wrap; overflow-wrap: anywhere; background: var(--panel); }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--panel); padding: .5rem;
  border: 1px solid var(--line); border-radius: 4px; max-height: 28rem; overflow: auto; }
mark { background: var(--mark); color: var(--mark-fg); padding: 0 .1rem; }
mark.leak { background: var(--leak); color: var(--leak-fg); }
.tag { display: inline-block; border: 1px solid currentColor; border-radius: 3px; padding: 0 .3rem;
  font-size: .8rem; margin-right: .3rem; }
.tag.gold { color: var(--gold); }
li.chunk { margin-bottom: .6rem; }
svg.chart { max-width: 100%; height: auto; }
svg.chart text { fill: var(--fg); font-size: 11px; }
svg.chart .axis { stroke: var(--muted); }
svg.chart .bar { fill: var(--bar); }
svg.chart .point { fill: var(--bar); stroke: var(--bar); }
svg.chart .point.off { fill: none; stroke-width: 2; }
svg.chart .frontier { stroke: var(--good); fill: none; stroke-width: 1.5; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 1rem; top: .5rem; background: var(--bg); padding: .3rem; }
details > summary { cursor: pointer; }
"""

APP_JS = """
"use strict";
(function () {
  // the runs list: the compare button is enabled once two or more runs are ticked
  var form = document.getElementById("compare-form");
  if (form) {
    var button = document.getElementById("compare-button");
    var count = document.getElementById("compare-count");
    var update = function () {
      var ticked = form.querySelectorAll("input[name=runs]:checked").length;
      button.disabled = ticked < 2;
      count.textContent = ticked + " selected";
    };
    form.addEventListener("change", update);
    update();
  }
  // a run in flight: poll its progress every 2 s, reload once it is no longer running; stop
  // polling when no live process drives it (a run left "running" by a process that died)
  var progress = document.getElementById("progress");
  if (progress && progress.dataset.run && progress.dataset.live === "yes") {
    var url = "/api/runs/" + encodeURIComponent(progress.dataset.run) + "/progress";
    var timer = window.setInterval(function () {
      fetch(url, { headers: { Accept: "application/json" } })
        .then(function (reply) { return reply.ok ? reply.json() : null; })
        .then(function (data) {
          if (!data) { return; }
          ["answered", "scored", "errors", "questions", "status"].forEach(function (key) {
            var cell = progress.querySelector("[data-field=" + key + "]");
            if (cell) { cell.textContent = String(data[key]); }
          });
          if (data.status !== "running") {
            window.clearInterval(timer);
            window.location.reload();
          } else if (!data.live) {
            window.clearInterval(timer);
            var state = progress.querySelector("[data-role=state]");
            if (state) { state.textContent = "not driven by any process (interrupted?)"; }
          }
        })
        .catch(function () { /* the server went away: try again in 2 s */ });
    }, 2000);
  }
})();
"""
