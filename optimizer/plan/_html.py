"""report.html: the plan as a page a person reads in a browser, offline (no network, no CDN).

The graph (groups coloured by device, shaded by precision, one cluster per engine), the engine timeline,
the plan against its baselines in the objective's metric, and per group the reason it sits where it does,
in the latency model's numbers; per node, its verdict per accelerator and precision with the rule IDs.
"""

from __future__ import annotations

import json
from html import escape

from optimizer.plan._build import Planned
from optimizer.plan._drawing import (
    MAX_DRAWN_GROUPS,
    PALETTE,
    comparison_svg,
    engine_dot,
    group_dot,
    render_dot,
    timeline_svg,
)
from optimizer.plan._views import GroupView, PlanView, plan_view, ratios, within_band

STYLE = """
body{font-family:Helvetica,Arial,sans-serif;margin:1.2em 2em;color:#222;max-width:1500px}
h1{font-size:1.35em}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}
th{background:#f0f0f0;cursor:pointer}td.num{text-align:right;font-variant-numeric:tabular-nums}
.graph{overflow:auto;max-height:80vh;border:1px solid #ddd}.graph g.group{cursor:pointer}
.graph g.group.selected polygon,.graph g.group.selected path{stroke:#d62728;stroke-width:3}
#details{position:sticky;top:0;background:#fffbe6;border:1px solid #e6d98c;padding:.5em 1em;font-size:13px;
min-height:2em}.legend span{display:inline-block;padding:1px 8px;margin:2px;font-size:12px;border-radius:3px}
.warn{color:#a15c00}.ok{color:#2a7d2a}.no{color:#b22222}.band{color:#555}
"""

SCRIPT = """
(function(){
  const data = JSON.parse(document.getElementById('plan-data').textContent);
  const panel = document.getElementById('details');
  function line(text){ const p = document.createElement('div'); p.textContent = text; panel.appendChild(p); }
  function show(index){
    const g = data.groups[index];
    if (!g) { return; }
    document.querySelectorAll('g.group.selected').forEach(function(el){ el.classList.remove('selected'); });
    const el = document.getElementById('g' + index);
    if (el) { el.classList.add('selected'); }
    panel.textContent = '';
    line('group ' + index + ' (' + g.members.length + ' node(s)) on ' + g.device + ' in ' + g.precision +
         ', ' + g.ms.toFixed(3) + ' ms, engine ' + g.subgraph);
    line(g.reason);
    g.members.forEach(function(m, k){ line('  ' + m + ' [' + g.ops[k] + ']  ' + (data.verdicts[m] || '')); });
  }
  document.querySelectorAll('g.group').forEach(function(el){
    el.addEventListener('click', function(){ show(el.id.slice(1)); });
  });
  document.querySelectorAll('tr[data-group]').forEach(function(row){
    row.addEventListener('click', function(){ show(row.getAttribute('data-group')); });
  });
  const filter = document.getElementById('node-filter');
  if (filter) {
    filter.addEventListener('input', function(){
      const q = filter.value.toLowerCase();
      document.querySelectorAll('#nodes tbody tr').forEach(function(row){
        row.style.display = row.textContent.toLowerCase().indexOf(q) >= 0 ? '' : 'none';
      });
    });
  }
})();
"""


def _verdict_text(planned: Planned, name: str) -> str:
    verdict = planned.report.verdict(name)
    parts = []
    for accelerator, precisions in verdict.supported.items():
        for precision, ok in precisions.items():
            if ok:
                parts.append(f"{accelerator}/{precision} ok")
            else:
                rules = sorted({v.rule for v in verdict.violations
                                if v.accelerator == accelerator and v.precision == precision})
                parts.append(f"{accelerator}/{precision} no ({', '.join(rules) or 'context'})")
    return "; ".join(parts)


def _json_script(payload: object) -> str:
    """JSON inside <script>: '<' escaped so no model text can close the element."""
    text = json.dumps(payload, sort_keys=True, ensure_ascii=True).replace("<", "\\u003c").replace(">", "\\u003e")
    return f'<script type="application/json" id="plan-data">{text}</script>'


def _headline(view: PlanView) -> str:
    main = view.comparisons[0]
    figure = f"{main.value:.3f} {main.unit}"
    if view.band is not None:
        figure += f' <span class="band">(likely {view.band[0]:.3f}-{view.band[1]:.3f} ms)</span>'
    solver = view.solver
    return (f"<p>Target <b>{escape(view.target_name)}</b> (<code>{escape(view.target)}</code>), objective "
            f"<b>{escape(view.objective)}</b>: predicted {escape(view.metric)} <b>{figure}</b>. Solver "
            f"{escape(solver.status)}, gap {solver.gap:.2%}, {solver.groups} layer groups.</p>")


def _comparison_table(planned: Planned, view: PlanView) -> str:
    rows = ["<table><thead><tr><th>plan</th><th>latency (ms)</th><th>throughput (fps)</th>"
            "<th>edgeplan's gain</th><th>note</th></tr></thead><tbody>"]
    pred = planned.plan.predicted
    rows.append(f'<tr><td>edgeplan</td><td class="num">{pred.latency_ms:.4f}</td>'
                f'<td class="num">{pred.throughput_fps:.1f}</td><td>-</td><td></td></tr>')
    for name, base in planned.plan.baselines.items():
        note = within_band(pred, base).lstrip("; ")
        fps = base.throughput_fps if base.pipelined_fps is None else base.pipelined_fps
        rows.append(f'<tr><td>{escape(name)}</td><td class="num">{base.latency_ms:.4f}</td>'
                    f'<td class="num">{fps:.1f}</td><td>{escape(ratios(base))}</td>'
                    f'<td class="warn">{note}</td></tr>')
    rows.append("</tbody></table>")
    return "".join(rows)


def _legend(groups: tuple[GroupView, ...]) -> str:
    used = {(g.device, g.precision) for g in groups}
    spans = []
    for device, shades in PALETTE.items():
        for precision, colour in shades.items():
            if (device, precision) not in used:
                continue
            text = "white" if precision == "int8" else "black"
            spans.append(f'<span style="background:{colour};color:{text}">{device} {precision}</span>')
    return f'<div class="legend">{"".join(spans)} <span style="color:#d62728">red edge: a transfer '
    'between engines (format, bytes, time)</span></div>'


def _groups_table(groups: tuple[GroupView, ...]) -> str:
    rows = ["<table id=\"groups\"><thead><tr><th>group</th><th>anchor</th><th>nodes</th><th>device</th>"
            "<th>precision</th><th>ms</th><th>why here (latency model)</th></tr></thead><tbody>"]
    for g in groups:
        rows.append(f'<tr data-group="{g.index}"><td class="num">{g.index}</td><td>{escape(g.anchor)}</td>'
                    f'<td class="num">{len(g.members)}</td><td>{escape(g.device)}'
                    f'{f" ({g.cores} cores)" if g.cores else ""}</td><td>{escape(g.precision)}</td>'
                    f'<td class="num">{g.ms:.4f}</td><td>{escape(g.reason)}</td></tr>')
    rows.append("</tbody></table>")
    return "".join(rows)


def _nodes_table(planned: Planned, verdicts: dict[str, str]) -> str:
    group_of = planned.groups.node_group
    rows = ['<input id="node-filter" placeholder="filter nodes" size="40">',
            '<table id="nodes"><thead><tr><th>node</th><th>op</th><th>group</th><th>verdict per accelerator '
            "and precision (rule IDs)</th></tr></thead><tbody>"]
    for node in planned.report.graph.nodes:
        g = group_of.get(node.name, -1)
        rows.append(f'<tr><td>{escape(node.name)}</td><td>{escape(node.op_type)}</td>'
                    f'<td class="num">{g if g >= 0 else "folded"}</td><td>{escape(verdicts[node.name])}</td></tr>')
    rows.append("</tbody></table>")
    return "".join(rows)


def _transfers_table(planned: Planned) -> str:
    transfers = planned.plan.transfers
    if not transfers:
        return "<p>No tensor crosses an engine boundary.</p>"
    rows = ["<table><thead><tr><th>tensor</th><th>from</th><th>to</th><th>format</th><th>bytes</th><th>ms</th>"
            "</tr></thead><tbody>"]
    rows += [f'<tr><td>{escape(t.tensor)}</td><td>{escape(t.src)}</td><td>{escape(t.dst)}</td>'
             f'<td>{escape(t.format)}</td><td class="num">{t.bytes}</td>'
             f'<td class="num">{t.latency_ms:.4f}</td></tr>' for t in transfers]
    rows.append("</tbody></table>")
    return "".join(rows)


def plan_html(planned: Planned) -> str:
    view = plan_view(planned)
    graph = planned.report.graph
    verdicts = {node.name: _verdict_text(planned, node.name) for node in graph.nodes}
    inputs = [t for t in graph.inputs if any(e.src < 0 and e.tensor == t for e in view.edges)]
    if len(view.groups) <= MAX_DRAWN_GROUPS:
        svg = render_dot(group_dot(view.groups, view.edges, view.subgraphs, inputs), len(view.groups))
        note = ""
    else:
        svg = render_dot(engine_dot(view.groups, view.edges, view.subgraphs), len(view.subgraphs))
        note = (f'<p class="warn">{len(view.groups)} layer groups are more than a drawing can show '
                f"({MAX_DRAWN_GROUPS}): one node per engine; every group is in the table below.</p>")
    graph_part = note + (f'<div class="graph">{svg}</div>' if svg is not None else
                  '<p class="warn">The graph is not drawn: Graphviz <code>dot</code> is not installed (install the '
                  "graphviz package) or gave up on this size; the tables below carry the same data.</p>")
    payload = {"groups": {str(g.index): {"members": list(g.members), "ops": list(g.op_types), "device": g.device,
                                         "precision": g.precision, "ms": g.ms, "subgraph": g.subgraph,
                                         "reason": g.reason} for g in view.groups},
               "verdicts": verdicts}
    warnings = "".join(f'<li class="warn">{escape(w)}</li>' for w in view.warnings)
    title = f"edgeplan plan: {view.model} on {view.target}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title><style>{STYLE}</style></head>
<body><h1>{escape(title)}</h1>
{_headline(view)}
{f"<ul>{warnings}</ul>" if warnings else ""}
<h2>Plan against the baselines ({escape(view.metric)})</h2>
{comparison_svg(view.comparisons, view.metric)}
{_comparison_table(planned, view)}
<h2>Engine timeline</h2>
<p>{escape(view.timeline.title)}</p>
{timeline_svg(view.timeline)}
<h2>Graph by device</h2>
{_legend(view.groups)}
<div id="details">Click a layer group (or a row of the table below) to see its nodes, their verdicts and why it
runs where it does.</div>
{graph_part}
<h2>Layer groups and why each is where it is</h2>
{_groups_table(view.groups)}
<h2>Transfers</h2>
{_transfers_table(planned)}
<h2>Verdicts per node</h2>
<details><summary>{len(graph.nodes)} ONNX nodes</summary>
{_nodes_table(planned, verdicts)}
</details>
{_json_script(payload)}
<script>{SCRIPT}</script>
</body></html>
"""
