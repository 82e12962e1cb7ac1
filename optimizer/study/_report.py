"""report.html: one self-contained page (inline SVG and CSS, nothing fetched) for a study."""

from __future__ import annotations

import html
import warnings
from typing import Any

import optuna

from optimizer.study._config import StudyConfig

COLOURS = {"gpu": "#4e79a7", "dla0": "#59a14f", "dla1": "#8cd17d", "npu": "#f28e2b", "cpu": "#e15759"}


def _history_svg(study: optuna.Study) -> str:
    trials = [t for t in sorted(study.trials, key=lambda t: t.number)
              if t.state == optuna.trial.TrialState.COMPLETE and t.value is not None]
    if not trials:
        return "<p>No completed trial.</p>"
    width, height, pad = 640, 260, 40
    values = [t.value for t in trials]
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    last = max(t.number for t in trials) or 1

    def xy(number: int, value: float) -> tuple[float, float]:
        return (pad + (width - 2 * pad) * number / last, height - pad - (height - 2 * pad) * (value - lo) / span)

    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#4e79a7"><title>trial {t.number}: '
                   f'{t.value:.4f}</title></circle>' for t in trials for x, y in [xy(t.number, t.value)])
    best, points = float("inf"), []
    for t in trials:
        best = min(best, t.value)
        points.append("{:.1f},{:.1f}".format(*xy(t.number, best)))
    axis = (f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#999"/>'
            f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#999"/>'
            f'<text x="{pad}" y="{height - 10}" font-size="11">trial 0</text>'
            f'<text x="{width - pad - 40}" y="{height - 10}" font-size="11">trial {last}</text>'
            f'<text x="4" y="{pad}" font-size="11">{hi:.3f}</text>'
            f'<text x="4" y="{height - pad}" font-size="11">{lo:.3f}</text>')
    return (f'<svg width="{width}" height="{height}" role="img" aria-label="optimisation history">{axis}{dots}'
            f'<polyline points="{" ".join(points)}" fill="none" stroke="#e15759" stroke-width="2"/></svg>')


def _importance_svg(study: optuna.Study) -> str:
    """Equal importances come back in hash order, which changes from process to process: ties sort by name."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # few trials per parameter regime: the table says so below
            importances = optuna.importance.get_param_importances(study)
    except (RuntimeError, ValueError, ZeroDivisionError):
        importances = {}
    if not importances:
        return "<p>Not enough completed trials with varying parameters to rank their importance.</p>"
    rows = sorted(importances.items(), key=lambda kv: (-round(kv[1], 6), kv[0]))
    width, bar = 640, 22
    svg = [f'<svg width="{width}" height="{bar * len(rows) + 10}" role="img" aria-label="parameter importances">']
    for i, (name, value) in enumerate(rows):
        svg.append(f'<text x="0" y="{i * bar + 15}" font-size="12">{html.escape(name)}</text>'
                   f'<rect x="200" y="{i * bar + 4}" width="{400 * value:.1f}" height="14" fill="#59a14f"/>'
                   f'<text x="{205 + 400 * value:.1f}" y="{i * bar + 15}" font-size="11">{value:.3f}</text>')
    svg.append("</svg>")
    return "".join(svg)


def _plan_table(plan: dict[str, Any]) -> str:
    anchors = [layer for layer in plan["layers"] if layer.get("role") == "anchor"]
    top = max((layer["latency_ms"] for layer in anchors), default=0.0) or 1.0
    rows = []
    for layer in anchors:
        colour = COLOURS.get(layer["device"], "#999")
        width = 300 * layer["latency_ms"] / top
        rows.append(f"<tr><td>{html.escape(layer['node'])}</td><td>{html.escape(layer['op_type'])}</td>"
                    f'<td><span class="dev" style="background:{colour}">{layer["device"]}</span></td>'
                    f"<td>{layer['precision']}</td><td>{layer['latency_ms']:.4f}</td>"
                    f'<td><svg width="310" height="12"><rect width="{width:.1f}" height="12" fill="{colour}"/>'
                    f"</svg></td></tr>")
    return ("<table><tr><th>layer group</th><th>op</th><th>device</th><th>precision</th><th>ms</th>"
            "<th></th></tr>" + "".join(rows) + "</table>")


def study_report_html(cfg: StudyConfig, study: optuna.Study, plan: dict[str, Any]) -> str:
    states: dict[str, int] = {}
    for t in study.trials:
        states[t.state.name] = states.get(t.state.name, 0) + 1
    pred = plan["predicted"]
    baselines = "".join(f"<li>{html.escape(k)}: {v['latency_ms']:.4f} ms (speedup x{v['speedup']:.2f})</li>"
                        for k, v in plan["baselines"].items())
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
<p>Latency {pred['latency_ms']:.4f} ms, throughput {pred['throughput_fps']:.1f} fps, solver
{html.escape(plan['solver']['status'])}.</p><ul>{baselines}</ul>
<h2>Optimisation history</h2>{_history_svg(study)}
<p>Blue: each trial's objective; red: the best so far. Trial 0 is the planner without the study.</p>
<h2>Parameter importances</h2>{_importance_svg(study)}
<h2>Per-layer device and latency of the best plan</h2>{_plan_table(plan)}
</body></html>
"""
