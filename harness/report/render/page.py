"""Page scaffolding shared by the HTML report and the viewer: escaping, CSS, table JS.

Every value that reaches HTML goes through ``e()`` (``html.escape`` with quotes), so run
ids, task ids, tool output and grader text can never inject markup. The CSS and the small
vanilla-JS table helper are inlined into every page: the report file works offline and the
viewer serves no static files.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any


def e(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def pct(x: Any, digits: int = 1) -> str:
    if not isinstance(x, int | float) or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{100 * x:.{digits}f}%"


def signed_pp(x: Any, digits: int = 1) -> str:
    """A difference of rates in percentage points, with its sign."""
    if not isinstance(x, int | float) or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{100 * x:+.{digits}f} pp"


def num(x: Any, digits: int = 3) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if math.isnan(x):
            return "—"
        return f"{x:,.{digits}g}" if abs(x) < 1e-3 and x else f"{x:,.{digits}f}"
    return str(x)


def money(x: Any) -> str:
    if not isinstance(x, int | float):
        return "—"
    return f"${x:,.4f}" if abs(x) < 1 else f"${x:,.2f}"


def pretty_json(value: Any, limit: int = 20_000) -> str:
    text = json.dumps(value, indent=2, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "\n…"


def badge(status: str | None) -> str:
    s = status or "unknown"
    return f'<span class="badge st-{e(s)}">{e(s)}</span>'


CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#d9dde5;--bg:#fff;--soft:#f5f7fa;
--pass:#1a7f37;--fail:#c62828;--warn:#b26a00;--info:#1f5fbf;--pass-bg:#e7f5ea;
--fail-bg:#fdecea;--warn-bg:#fff4e0;--info-bg:#e8f0fd}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
margin:0;background:var(--bg)}
header.top{background:#18212f;color:#fff;padding:10px 24px;display:flex;gap:18px;
align-items:baseline;flex-wrap:wrap}
header.top a{color:#cfe0ff}
header.top .brand{font-weight:700;letter-spacing:.02em}
main{padding:16px 24px 48px;max-width:1400px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;
border-bottom:1px solid var(--line);padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
.muted{color:var(--muted)}.small{font-size:12px}
table{border-collapse:collapse;margin:6px 0 10px}
th,td{border-bottom:1px solid var(--line);padding:4px 10px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
table.kv th{background:none;color:var(--muted);font-weight:500}
.badge{display:inline-block;padding:1px 7px;border-radius:9px;font-size:12px;font-weight:600;
background:var(--soft)}
.st-passed,.st-ok,.v-pass{background:var(--pass-bg);color:var(--pass)}
.st-failed,.st-violated,.st-exceeded,.v-fail{background:var(--fail-bg);color:var(--fail)}
.st-infra_error,.st-grader_error,.st-harness_error,.st-unverified,.v-inconclusive{background:var(--warn-bg);
color:var(--warn)}
.verdict{font-size:18px;font-weight:700;padding:8px 14px;border-radius:6px;display:inline-block}
.cards{display:flex;gap:12px;flex-wrap:wrap}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 14px;min-width:220px}
.card .big{font-size:24px;font-weight:700}
figure.plot{margin:8px 0 16px;display:inline-block;vertical-align:top}
figure.plot svg{max-width:100%;height:auto}
figure.plot figcaption{font-size:12px;color:var(--muted);max-width:640px}
.toolbar{display:flex;gap:14px;align-items:center;flex-wrap:wrap;margin:6px 0}
.toolbar input[type=search]{padding:4px 8px;min-width:260px}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th[aria-sort=ascending]::after{content:" ▲"}
table.sortable th[aria-sort=descending]::after{content:" ▼"}
tr.unstable td.tid::after{content:" ◐";color:var(--warn)}
tr.discordant{background:#fffbe8}
.diff td.path{font-family:ui-monospace,Menlo,Consolas,monospace}
.diff tr.missing td{background:var(--warn-bg)}
.diff tr.wrong td{background:var(--fail-bg)}
.diff tr.side td{background:var(--info-bg)}
.diff td.exp{color:var(--pass)}.diff td.act{color:var(--fail)}
pre,code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:var(--soft);padding:8px;border-radius:4px;overflow:auto;max-height:420px;
white-space:pre-wrap;word-break:break-word;margin:4px 0}
.event{border-left:4px solid var(--line);padding:4px 10px;margin:6px 0}
.event.k-message{border-color:var(--info)}.event.k-user{border-color:#7b3fbf}
.event.k-tool_call{border-color:#8a94a6}.event.notok{border-color:var(--warn)}
.event.violation{border-color:var(--fail);background:var(--fail-bg)}
.event .head{font-weight:600}.event .viol{color:var(--fail);font-weight:600}
.grader{border:1px solid var(--line);border-radius:8px;padding:6px 12px;margin:8px 0}
ul.reasons{margin:4px 0 4px 18px;padding:0}
nav.crumbs{margin:4px 0 8px;color:var(--muted)}
"""

TABLE_JS = """
(function(){
function key(td,numeric){var v=td?td.getAttribute('data-v'):null;if(v===null)v=td?td.textContent:'';
if(numeric){var f=parseFloat(v);return isNaN(f)?-Infinity:f;}return v.toLowerCase();}
document.querySelectorAll('table.sortable').forEach(function(table){
var body=table.tBodies[0];if(!body)return;
table.querySelectorAll('thead th').forEach(function(th,i){th.addEventListener('click',function(){
var asc=th.getAttribute('aria-sort')!=='ascending';
table.querySelectorAll('thead th').forEach(function(o){o.removeAttribute('aria-sort');});
th.setAttribute('aria-sort',asc?'ascending':'descending');
var numeric=th.classList.contains('n');var rows=Array.prototype.slice.call(body.rows);
var keyed=rows.map(function(r){return [key(r.cells[i],numeric),r];});
keyed.sort(function(a,b){return a[0]<b[0]?(asc?-1:1):a[0]>b[0]?(asc?1:-1):0;});
var frag=document.createDocumentFragment();keyed.forEach(function(p){frag.appendChild(p[1]);});
body.appendChild(frag);});});});
document.querySelectorAll('[data-filter-for]').forEach(function(box){
var table=document.getElementById(box.getAttribute('data-filter-for'));if(!table)return;
var text=box.querySelector('input[type=search]');
var checks=box.querySelectorAll('input[type=checkbox]');
var count=box.querySelector('.count');
function apply(){var q=text?text.value.trim().toLowerCase():'';var need=[];
checks.forEach(function(c){if(c.checked)need.push(c.value);});var shown=0;
Array.prototype.forEach.call(table.tBodies[0].rows,function(r){
var ok=!q||r.textContent.toLowerCase().indexOf(q)>=0;
for(var j=0;ok&&j<need.length;j++){ok=r.classList.contains(need[j]);}
r.hidden=!ok;if(ok)shown++;});if(count)count.textContent=shown+' shown';}
if(text)text.addEventListener('input',apply);
checks.forEach(function(c){c.addEventListener('change',apply);});
if(count)count.textContent=table.tBodies[0].rows.length+' shown';});
})();
"""


def page(title: str, body: str, *, nav: str = "", scripts: bool = True) -> str:
    """A complete HTML document: inline CSS, the table helper, no external resource."""
    script = f"<script>{TABLE_JS}</script>" if scripts else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # No network: forbid every external fetch; inline styles/scripts/images only.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
        "connect-src 'none'; form-action 'self'\">"
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>"
        f'<header class="top"><span class="brand">harness</span>{nav}</header>'
        f"<main>{body}</main>{script}</body></html>"
    )


def table(headers: list[str], rows: list[list[str]], *, cls: str = "", numeric=()) -> str:
    """A simple table; cells are pre-escaped HTML, ``numeric`` names right-aligned columns."""
    head = "".join(
        f'<th class="n">{e(h)}</th>' if h in numeric else f"<th>{e(h)}</th>" for h in headers
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{c}</td>' if headers[i] in numeric else f"<td>{c}</td>"
            for i, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    return f'<table class="{e(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
