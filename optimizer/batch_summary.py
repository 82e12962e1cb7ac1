"""summary.html of a batch: one sortable row per model x target, a link to each job's report, and a chart of
the planner's speedup over the best baseline per model and target (offline, no network)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

COLUMNS = (("model", "model", "text"), ("target", "target", "text"), ("status", "status", "text"),
           ("unknown_sizes", "unknown sizes", "text"), ("nodes", "nodes", "int"), ("groups", "groups", "int"),
           ("accelerator_coverage", "on accelerator", "pct"), ("latency_ms", "predicted (ms)", "ms"),
           ("baseline", "best baseline", "text"), ("baseline_ms", "baseline (ms)", "ms"),
           ("speedup", "latency gain", "x"), ("solver_status", "solver", "text"), ("solve_s", "solve (s)", "s"),
           ("wall_s", "wall (s)", "s"), ("objective", "objective", "text"), ("note", "note", "text"),
           ("error", "error", "text"))
STATUS_COLOUR = {"ok": "#e8f5e9", "infeasible": "#fff8e1", "needs-shapes": "#e3f2fd", "refused": "#fce4ec"}

SCRIPT = """
(function(){
  document.querySelectorAll('table.sortable th').forEach(function(th, col){
    th.addEventListener('click', function(){
      const body = th.closest('table').tBodies[0];
      const rows = Array.prototype.slice.call(body.rows);
      const down = th.getAttribute('data-dir') !== 'down';
      th.parentNode.querySelectorAll('th').forEach(function(o){ o.removeAttribute('data-dir'); });
      th.setAttribute('data-dir', down ? 'down' : 'up');
      rows.sort(function(a, b){
        const x = a.cells[col].getAttribute('data-v'), y = b.cells[col].getAttribute('data-v');
        const nx = parseFloat(x), ny = parseFloat(y);
        const c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return down ? c : -c;
      });
      rows.forEach(function(r){ body.appendChild(r); });
    });
  });
})();
"""


def _cell(value: Any, kind: str) -> tuple[str, str]:
    """(shown text, sort key)."""
    if value in (None, ""):
        return "", ""
    if kind == "text":
        return str(value), str(value)
    number = float(value)
    shown = {"int": f"{number:.0f}", "pct": f"{number:.0%}", "ms": f"{number:.3f}", "x": f"x{number:.2f}",
             "s": f"{number:.2f}"}[kind]
    return shown, repr(number)


def report_link(row: Mapping[str, Any], out: Path) -> str | None:
    """The job's report.html relative to the summary, when the job wrote one."""
    plan = row.get("plan")
    if not plan:
        return None
    report = Path(str(plan)).with_name("report.html")
    if not report.is_file():
        return None
    return "./" + Path(os.path.relpath(report.resolve(), out.resolve())).as_posix()  # never read as a URL scheme


def _table(rows: Sequence[Mapping[str, Any]], out: Path) -> str:
    head = "".join(f"<th>{escape(label)}</th>" for _, label, _ in COLUMNS) + "<th>report</th>"
    body = []
    for row in rows:
        cells = []
        for key, _, kind in COLUMNS:
            shown, sort = _cell(row.get(key, ""), kind)
            cells.append(f'<td data-v="{escape(sort)}">{escape(shown)}</td>')
        link = report_link(row, out)
        cells.append(f'<td data-v=""><a href="{escape(link)}">report</a></td>' if link else '<td data-v=""></td>')
        colour = STATUS_COLOUR.get(str(row.get("status")), "#ffebee")
        body.append(f'<tr style="background:{colour}">{"".join(cells)}</tr>')
    return (f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')


def _speedup_chart(rows: Sequence[Mapping[str, Any]], width: int = 760) -> str:
    """One bar per model x target: the plan's latency gain over the best baseline, with x1 marked."""
    points = [(f"{r.get('group') or Path(str(r['model'])).stem} @ {r['target']}", float(r["speedup"])) for r in rows
              if r.get("status") in ("ok", "needs-shapes") and r.get("speedup") not in (None, "")]
    if not points:
        return "<p>No finished plan to chart.</p>"
    left, bar_h, top = 260, 18, 8
    plot = width - left - 70
    biggest = max(max(v for _, v in points), 1.0)
    height = top + bar_h * len(points) + 40
    one = left + plot / biggest
    out = [f'<svg class="speedups" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="speedup per model and target">']
    for k, (label, value) in enumerate(points):
        y = top + k * bar_h
        w = plot * value / biggest
        colour = "#2ca02c" if value > 1.0 else "#aaaaaa"
        out.append(f'<g class="speedup"><text x="{left - 6}" y="{y + 13}" text-anchor="end" font-size="11">'
                   f'{escape(label)}</text><rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{bar_h - 5}" '
                   f'fill="{colour}"/><text x="{left + w + 4:.1f}" y="{y + 13}" font-size="11">x{value:.2f}</text></g>')
    axis_y = top + bar_h * len(points) + 4
    out.append(f'<line x1="{one:.1f}" y1="{top}" x2="{one:.1f}" y2="{axis_y}" stroke="#d62728" '
               f'stroke-dasharray="4,3"/><text x="{one:.1f}" y="{axis_y + 14}" text-anchor="middle" '
               f'font-size="11" fill="#d62728">x1</text>')
    out.append(f'<text x="{left + plot / 2}" y="{axis_y + 30}" text-anchor="middle" font-size="12">latency gain '
               "over the best baseline (higher is better)</text></svg>")
    return "".join(out)


def summary_html(rows: Sequence[Mapping[str, Any]], out: Path) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[str(row.get("status"))] = counts.get(str(row.get("status")), 0) + 1
    tally = ", ".join(f"{n} {escape(s)}" for s, n in sorted(counts.items()))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>edgeplan batch</title>
<style>body{{font-family:Helvetica,Arial,sans-serif;margin:1.5em 2em;color:#222}}
table{{border-collapse:collapse;font-size:12px}}td,th{{border:1px solid #ddd;padding:2px 6px}}
th{{background:#f0f0f0;cursor:pointer}}th[data-dir=down]::after{{content:" \\25BC"}}
th[data-dir=up]::after{{content:" \\25B2"}}</style></head><body>
<h1>edgeplan batch</h1><p>{len(rows)} jobs: {tally}. Click a column to sort.</p>
<h2>Speedup per model and target</h2>
{_speedup_chart(rows)}
<h2>Jobs</h2>
{_table(rows, out)}
<script>{SCRIPT}</script>
</body></html>
"""
