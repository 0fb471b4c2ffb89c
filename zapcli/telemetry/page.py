"""The timeline as one self-contained HTML page: its data, style and script
inline, a Content-Security-Policy that allows no request, no font or image
from anywhere (it opens from a file, offline, forever).

Imports the standard library only (json). The script draws a row per
subagent — its id, name and task (cut to the room left, whole on hover),
status and tokens (never cut) — with queued, running, awaiting approval, its
end, and its model and tool calls as bars; details on hover.
"""

from __future__ import annotations

import html
import json
from typing import Any

from zapcli.money import dollars

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

STYLE = """
:root{--bg:#fff;--fg:#1d2330;--muted:#6b7280;--grid:#eceff3;--queued:#c9ced6;--running:#4f8fe6;
--await:#f2b33d;--model:#8a63d2;--tool:#2fa37a;--sh:#2fa37a;--error:#d64545;--ok:#2fa37a}
*{box-sizing:border-box}body{margin:0;font:13px/1.35 system-ui,-apple-system,"Segoe UI",sans-serif;
color:var(--fg);background:var(--bg)}header{padding:14px 18px;border-bottom:1px solid var(--grid)}
h1{font-size:16px;margin:0 0 4px}.sum{color:var(--muted)}#legend{display:flex;gap:14px;padding:8px 18px;
color:var(--muted);flex-wrap:wrap}#legend i{display:inline-block;width:12px;height:10px;border-radius:2px;
margin-right:5px;vertical-align:-1px}#chart{padding:4px 18px 24px}.axis,.row{display:flex}
.label{flex:0 0 460px;display:flex;align-items:baseline;gap:4px;padding:3px 8px 3px 0;
overflow:hidden;white-space:nowrap}.label>span{flex:none}.label .task{flex:1 1 auto;min-width:0;
overflow:hidden;text-overflow:ellipsis;color:var(--fg)}
.label .id{font-family:ui-monospace,Menlo,monospace;font-size:12px}.label .st{font-size:11px;
padding:0 5px;border-radius:8px;color:#fff;background:var(--muted)}
.st.completed{background:var(--ok)}.st.failed,.st.timeout,.st.lost,.st.cancelled,.st.interrupted
{background:var(--error)}.st.running{background:var(--running)}.st.awaiting_approval{background:var(--await)}
.label .tok{color:var(--muted);font-size:11px}.track{position:relative;flex:1;
border-left:1px solid var(--grid);background:repeating-linear-gradient(90deg,transparent 0,
transparent calc(10% - 1px),var(--grid) calc(10% - 1px),var(--grid) 10%)}.row{border-top:1px solid var(--grid)}
.bar{position:absolute;min-width:2px;border-radius:2px}.agent{top:4px;height:14px;background:transparent}
.phase{top:0;height:14px;position:absolute}.queued{background:var(--queued)}.running{background:var(--running)}
.awaiting{background:var(--await)}.end{position:absolute;top:-2px;width:3px;height:18px;border-radius:1px}
.end.ok{background:var(--ok)}.end.bad{background:var(--error)}.call{height:8px}.call.model{background:var(--model)}
.call.tool,.call.sh{background:var(--tool)}.call.err{outline:1.5px solid var(--error)}
.axis .track{height:18px;background:none;border-left:none}.tick{position:absolute;top:2px;font-size:11px;
color:var(--muted);transform:translateX(-50%);white-space:nowrap}.tick:first-child{transform:none}
.tick:last-child{transform:translateX(-100%)}#tip{position:fixed;z-index:9;max-width:460px;padding:8px 10px;
background:#1d2330;color:#fff;border-radius:6px;font-size:12px;pointer-events:none;white-space:pre-wrap;
box-shadow:0 4px 14px rgba(0,0,0,.25)}#tip[hidden]{display:none}
"""

SCRIPT = r"""
(function(){
const D = JSON.parse(document.getElementById('timeline-data').textContent);
const t0 = D.start, span = Math.max(D.end - D.start, 1e-3);
const pct = t => (100 * (t - t0) / span).toFixed(4) + '%';
const wid = (a, b) => (100 * Math.max(b - a, 0) / span).toFixed(4) + '%';
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls;
  if (text != null) e.textContent = text; return e; };
const secs = s => s < 1 ? (s * 1000).toFixed(0) + ' ms' : s < 120 ? s.toFixed(1) + ' s' : (s / 60).toFixed(1) + ' min';
const fmt = n => n >= 1e6 ? (n / 1e6).toFixed(1) + 'M' : n >= 1e3 ? (n / 1e3).toFixed(1) + 'k' : String(n);
const tip = document.getElementById('tip');
function hover(node, text) { node.dataset.tip = text; }
document.addEventListener('mousemove', e => {
  const t = e.target.closest('[data-tip]');
  if (!t) { tip.hidden = true; return; }
  tip.textContent = t.dataset.tip; tip.hidden = false;
  tip.style.left = Math.min(e.clientX + 14, innerWidth - 470) + 'px'; tip.style.top = (e.clientY + 14) + 'px';
});
const chart = document.getElementById('chart');
const axis = el('div', 'axis'); axis.appendChild(el('div', 'label'));
const at = el('div', 'track');
for (let i = 0; i <= 10; i++) { const k = el('span', 'tick', secs(span * i / 10)); k.style.left = (i * 10) + '%'; at.appendChild(k); }
axis.appendChild(at); chart.appendChild(axis);
const bad = s => ['failed', 'timeout', 'lost', 'cancelled', 'interrupted'].includes(s);
for (const r of D.rows) {
  const row = el('div', 'row'); row.dataset.id = r.id;
  const label = el('div', 'label');
  label.style.paddingLeft = (r.depth * 16) + 'px';
  label.appendChild(el('span', 'id', (r.depth ? '↳ ' : '') + r.id));
  label.appendChild(el('span', 'name', r.name));
  label.appendChild(el('span', 'task', r.task.replace(/\s+/g, ' ')));
  label.appendChild(el('span', 'st ' + r.status, r.status));
  const cost = r.cost_usd != null ? ' · $' + r.cost_usd.toFixed(4) : '';
  const used = r.tokens.input || r.tokens.output || r.cli !== 'sh';
  label.appendChild(el('span', 'tok', used ? fmt(r.tokens.input) + ' in / ' + fmt(r.tokens.output) + ' out' + cost : ''));
  hover(label, r.id + ' — ' + r.task);
  row.appendChild(label);
  const track = el('div', 'track');
  track.style.height = (24 + 11 * r.lanes) + 'px';
  const bar = el('div', 'bar agent'); bar.dataset.kind = 'subagent'; bar.dataset.id = r.id;
  bar.style.left = pct(r.created); bar.style.width = wid(r.created, r.ended);
  const lines = [r.id + '  ' + r.name + ' (' + r.cli + ')', 'status: ' + r.status + (r.reason ? ' — ' + r.reason : ''),
    'task: ' + r.task, 'queued ' + secs(((r.started != null ? r.started : r.ended) - r.created)) +
    (r.started != null ? ', ran ' + secs(r.ended - r.started) : ''),
    'tokens: ' + r.tokens.input + ' in, ' + r.tokens.output + ' out, ' + r.tokens.cached + ' cached' + cost];
  if (r.model) lines.push('model: ' + r.model);
  hover(bar, lines.join('\n'));
  const inner = (a, b, cls, what) => { const p = el('div', 'phase ' + cls); p.dataset.kind = cls;
    p.style.left = (100 * (a - r.created) / Math.max(r.ended - r.created, 1e-6)) + '%';
    p.style.width = (100 * Math.max(b - a, 0) / Math.max(r.ended - r.created, 1e-6)) + '%';
    hover(p, what + ': ' + secs(b - a)); bar.appendChild(p); };
  const began = r.started != null ? r.started : r.ended;
  if (began > r.created) inner(r.created, began, 'queued', 'queued');
  if (r.started != null) inner(r.started, r.ended, 'running', r.running_now ? 'running (now)' : 'running');
  for (const w of r.waits) inner(w[0], w[1], 'awaiting', 'awaiting approval');
  track.appendChild(bar);
  if (!r.running_now) { const m = el('div', 'end ' + (bad(r.status) ? 'bad' : 'ok')); m.dataset.kind = 'end';
    m.style.left = pct(r.ended); hover(m, r.status + (r.reason ? ': ' + r.reason : '')); track.appendChild(m); }
  for (const c of r.calls) {
    const b = el('div', 'bar call ' + c.kind + (c.error ? ' err' : '')); b.dataset.kind = c.kind;
    b.dataset.call = c.span_id; b.style.left = pct(c.start); b.style.width = wid(c.start, c.end);
    b.style.top = (22 + 11 * c.lane) + 'px';
    const d = Object.entries(c.details).map(([k, v]) => k + ': ' + v);
    hover(b, [c.name + '  (' + secs(c.end - c.start) + ')'].concat(d, c.error ? ['error: ' + c.error] : []).join('\n'));
    track.appendChild(b);
  }
  row.appendChild(track); chart.appendChild(row);
}
document.body.dataset.rendered = String(D.rows.length);
})();
"""


def _summary(data: dict[str, Any]) -> str:
    rows = data["rows"]
    calls = sum(len(r["calls"]) for r in rows)
    cost = f", {dollars(data['cost_usd'])}" if data.get("cost_usd") is not None else ""
    seconds = data["end"] - data["start"]
    runs = sum(1 for r in rows if r.get("is_run"))
    kids = len(rows) - runs  # as `list` counts them: a run is the run
    said = (f"{runs} run{'s' if runs != 1 else ''}, " if runs else "") + \
        f"{kids} subagent{'s' if kids != 1 else ''}"
    return (f"{said}, {calls} calls, "
            f"{data['tokens']['input']:,} tokens in / {data['tokens']['output']:,} out{cost}, "
            f"{seconds:.1f} s")


LEGEND = [("queued", "queued"), ("running", "running"), ("await", "awaiting approval"),
          ("model", "model call"), ("tool", "tool call / sh"), ("error", "ended in error")]


def render(data: dict[str, Any]) -> str:
    """The page for `zapcli.telemetry.timeline.collect`'s data."""
    from zapcli.jsontext import escape_json

    payload = escape_json(json.dumps(data, ensure_ascii=False, default=str).encode()).decode()
    payload = payload.replace("<", "\\u003c")
    legend = "".join(f'<span><i style="background:var(--{k})"></i>{html.escape(t)}</span>' for k, t in LEGEND)
    title = html.escape(f"zapcli timeline — {data['title']}")
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{title}</title><style>{STYLE}</style></head><body>"
            f"<header><h1>{title}</h1><div class=\"sum\">{html.escape(_summary(data))}</div></header>"
            f'<div id="legend">{legend}</div><div id="chart"></div><div id="tip" hidden></div>'
            f'<script id="timeline-data" type="application/json">{payload}</script>'
            f"<script>{SCRIPT}</script></body></html>\n")
