"""report.html: one self-contained page (inline SVG and CSS, nothing fetched) for a study."""

from __future__ import annotations

import html

import optuna

from optimizer.plan import Plan, ratios
from optimizer.study._config import StudyConfig
from optimizer.study._plots import history_svg, importance_svg, pareto_svg

COLOURS = {"gpu": "#4e79a7", "dla0": "#59a14f", "dla1": "#8cd17d", "npu": "#f28e2b", "cpu": "#e15759"}


def _plan_table(plan: Plan) -> str:
    anchors = [layer for layer in plan.layers if layer.role == "anchor"]
    top = max((layer.latency_ms for layer in anchors), default=0.0) or 1.0
    rows = []
    for layer in anchors:
        colour = COLOURS.get(layer.device, "#999")
        width = 300 * layer.latency_ms / top
        rows.append(f"<tr><td>{html.escape(layer.node)}</td><td>{html.escape(layer.op_type)}</td>"
                    f'<td><span class="dev" style="background:{colour}">{layer.device}</span></td>'
                    f"<td>{layer.precision}</td><td>{layer.latency_ms:.4f}</td>"
                    f'<td><svg width="310" height="12"><rect width="{width:.1f}" height="12" fill="{colour}"/>'
                    f"</svg></td></tr>")
    return ("<table><tr><th>layer group</th><th>op</th><th>device</th><th>precision</th><th>ms</th>"
            "<th></th></tr>" + "".join(rows) + "</table>")


def study_report_html(cfg: StudyConfig, study: optuna.Study, plan: Plan) -> str:
    states: dict[str, int] = {}
    for t in study.trials:
        states[t.state.name] = states.get(t.state.name, 0) + 1
    pred = plan.predicted
    baselines = "".join(f"<li>{html.escape(k)}: {v.latency_ms:.4f} ms ({html.escape(ratios(v))})</li>"
                        for k, v in plan.baselines.items())
    what = ("latency per frame" if cfg.objective == "latency" else "busiest engine time per cycle")
    pareto = pareto_svg(study, [what, "objective 2", "objective 3"])
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>edgeplan study {html.escape(cfg.name)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1000px}}table{{border-collapse:collapse;font-size:12px}}
td,th{{border-bottom:1px solid #ddd;padding:2px 6px;text-align:left}}.dev{{color:#fff;padding:0 4px;border-radius:3px}}
</style></head><body>
<h1>edgeplan study: {html.escape(cfg.name)}</h1>
<p>Model {html.escape(str(cfg.model))} on {html.escape(cfg.target)}, objective {html.escape(cfg.objective)},
{cfg.n_trials} trials (seed {cfg.seed}, {html.escape(cfg.sampler)} sampler). Trial states:
{html.escape(", ".join(f"{k} {v}" for k, v in sorted(states.items())))}.</p>
<h2>Best plan</h2>
<p>Latency {pred.latency_ms:.4f} ms, throughput {pred.throughput_fps:.1f} fps, solver
{html.escape(plan.solver.status)}.</p><ul>{baselines}</ul>
<h2>Optimisation history</h2>{history_svg(study, "ms")}
<p>Objective: {html.escape(what)} in ms (lower is better), one dot per trial, the line the best so far.
Trial 0 is the planner without the study. Best plan's page: <a href="plan.html">plan.html</a>.</p>
<h2>Parameter importances</h2>{importance_svg(study)}
{f"<h2>Pareto front</h2>{pareto}" if pareto else ""}
<h2>Per-layer device and latency of the best plan</h2>{_plan_table(plan)}
</body></html>
"""
