"""SVG for the plan page: the group graph laid out by Graphviz `dot` (as TensorRT Engine Explorer draws
engines), the engine timeline and the comparison chart. Model text only ever reaches SVG escaped."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from html import escape

from optimizer.plan._views import Bar, Comparison, EdgeView, GroupView, Timeline

# One hue per device, shaded by precision (darkest = fewest bits), so colour reads "where" and shade "how".
PALETTE = {
    "gpu": {"int8": "#3f7d00", "fp16": "#76b900", "fp32": "#b7e07a"},
    "dla0": {"int8": "#134a7c", "fp16": "#1f77b4", "fp32": "#8fbbe0"},
    "dla1": {"int8": "#0b6f7a", "fp16": "#17becf", "fp32": "#8fe0ea"},
    "npu": {"int8": "#b35900", "fp16": "#ff7f0e", "fp32": "#ffc08a"},
    "cpu": {"int8": "#5e3c8a", "fp16": "#9467bd", "fp32": "#cdb5e3"},
}
LANE_COLOUR = {"gpu": "#76b900", "dla0": "#1f77b4", "dla1": "#17becf", "npu": "#ff7f0e", "cpu": "#9467bd",
               "transfers": "#7f7f7f"}
DOT_TIMEOUT_S = 60.0


def fill(device: str, precision: str) -> str:
    return PALETTE.get(device, PALETTE["cpu"]).get(precision, "#cccccc")


def _dot_text(value: str, limit: int = 48) -> str:
    """A DOT double-quoted string that shows `value` literally (no escapes such as \\N, no line breaks)."""
    flat = " ".join(value.split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return flat.replace("\\", "\\\\").replace('"', '\\"')


def _bytes(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def group_dot(groups: Sequence[GroupView], edges: Sequence[EdgeView],
              subgraphs: Sequence[tuple[int, str, int]], inputs: Sequence[str]) -> str:
    """Layer groups as nodes (fused members collapse into their group), one cluster per engine."""
    lines = ["digraph plan {", 'graph [rankdir=TB, nodesep=0.15, ranksep=0.25, fontname="Helvetica", fontsize=10];',
             'node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=9, height=0.25, '
             'margin="0.06,0.02"];',
             'edge [fontname="Helvetica", fontsize=8, color="#888888", arrowsize=0.5];']
    by_subgraph: dict[int, list[GroupView]] = {}
    for g in groups:
        by_subgraph.setdefault(g.subgraph, []).append(g)
    for sid, device, loadable in subgraphs:
        what = f"loadable {loadable} on {device}" if loadable >= 0 else f"{device}"
        colour = LANE_COLOUR.get(device, "#999999")
        lines.append(f'subgraph cluster_{sid} {{ label="engine {sid}: {_dot_text(what)}"; id="engine{sid}"; '
                     f'class="engine dev_{_dot_text(device)}"; style="rounded,dashed"; color="{colour}";')
        for g in by_subgraph.get(sid, []):
            extra = f" +{len(g.members) - 1}" if len(g.members) > 1 else ""
            label = f"{_dot_text(g.anchor, 32)}{extra}\\n{_dot_text(g.op_types[0], 16)} {g.precision}"
            tip = _dot_text(f"group {g.index}: {g.reason}", 400)
            text = "white" if g.precision == "int8" else "black"
            lines.append(f'g{g.index} [id="g{g.index}", class="group dev_{g.device} prec_{g.precision}", '
                         f'label="{label}", fillcolor="{fill(g.device, g.precision)}", fontcolor="{text}", '
                         f'tooltip="{tip}"];')
        lines.append("}")
    for k, name in enumerate(inputs):
        lines.append(f'in{k} [id="in{k}", class="model-input", shape=ellipse, style=filled, fillcolor="#eeeeee", '
                     f'label="{_dot_text(name, 32)}"];')
    input_node = {name: f"in{k}" for k, name in enumerate(inputs)}
    seen: set[tuple[str, int, int]] = set()
    for e in edges:
        src = f"g{e.src}" if e.src >= 0 else input_node.get(e.tensor)
        if src is None or (e.tensor, e.src, e.dst) in seen:
            continue
        seen.add((e.tensor, e.src, e.dst))
        if e.boundary:
            label = _dot_text(f"{e.fmt} {_bytes(e.bytes)} {e.ms:.3f} ms", 60)
            lines.append(f'{src} -> g{e.dst} [class="boundary", color="#d62728", penwidth=1.6, fontcolor="#d62728", '
                         f'label="{label}", tooltip="{_dot_text(e.tensor, 200)}"];')
        else:
            lines.append(f"{src} -> g{e.dst};")
    lines.append("}")
    return "\n".join(lines) + "\n"


# Past this many groups dot's crossing minimisation and network simplex dominate (721 groups: 6.3 s with the
# defaults, 1.3 s with these limits on this machine); the layout stays layered, with a few more crossings.
FAST_LAYOUT_GROUPS = 300
FAST_LAYOUT = ("-Gnslimit=0.5", "-Gnslimit1=0.5", "-Gmclimit=0.1")


def render_dot(dot: str, groups: int) -> str | None:
    """The graph as SVG, or None when Graphviz is not installed or gives up (the page then says so)."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    limits = FAST_LAYOUT if groups > FAST_LAYOUT_GROUPS else ()
    try:
        result = subprocess.run([exe, "-Tsvg", *limits], input=dot.encode(), capture_output=True,
                                timeout=DOT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None
    if result.returncode != 0:
        return None
    svg = result.stdout.decode("utf-8", "replace")
    return svg[svg.find("<svg"):]  # drop the XML prolog and DOCTYPE: the SVG is inlined in HTML


def _ticks(span: float, count: int = 8) -> list[float]:
    if span <= 0:
        return [0.0]
    raw = span / count
    magnitude = 10 ** int(f"{raw:e}".split("e")[1])
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    ticks, t = [], 0.0
    while t <= span * 1.0001:
        ticks.append(round(t, 9))
        t += step
    return ticks


def timeline_svg(timeline: Timeline, width: int = 1100) -> str:
    """A Gantt chart: one lane per engine in use, time in ms on the x axis."""
    left, lane_h, top = 110, 26, 24
    plot = width - left - 20
    span = timeline.span_ms or 1.0
    height = top + lane_h * len(timeline.lanes) + 40
    scale = plot / span
    rows = {lane: k for k, lane in enumerate(timeline.lanes)}
    out = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="engine timeline">']
    for lane, k in rows.items():
        y = top + k * lane_h
        out.append(f'<g class="lane" data-lane="{escape(lane)}"><rect x="{left}" y="{y}" width="{plot}" '
                   f'height="{lane_h - 4}" fill="#f4f4f4"/><text x="{left - 8}" y="{y + lane_h / 2 + 2}" '
                   f'text-anchor="end" font-size="12">{escape(lane.upper())}</text></g>')
    for bar in timeline.bars:
        out.append(_bar_rect(bar, rows[bar.lane], left, top, lane_h, scale))
    axis_y = top + lane_h * len(timeline.lanes) + 4
    out.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + plot}" y2="{axis_y}" stroke="#333"/>')
    for t in _ticks(span):
        x = left + t * scale
        out.append(f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 5}" stroke="#333"/>'
                   f'<text x="{x:.1f}" y="{axis_y + 17}" text-anchor="middle" font-size="11">{t:g}</text>')
    out.append(f'<text x="{left + plot / 2}" y="{axis_y + 33}" text-anchor="middle" font-size="12">time (ms)</text>')
    out.append("</svg>")
    return "".join(out)


def _bar_rect(bar: Bar, row: int, left: int, top: int, lane_h: int, scale: float) -> str:
    x = left + bar.start_ms * scale
    w = max((bar.end_ms - bar.start_ms) * scale, 0.6)
    y = top + row * lane_h + 2
    colour = LANE_COLOUR.get(bar.lane.split(" ")[0], "#999")
    if bar.kind in ("transfer", "reformat"):
        colour = "#d62728" if bar.kind == "transfer" else "#e377c2"
    elif bar.kind == "launch":
        colour = "#333333"
    group = f' data-group="{bar.group}"' if bar.group is not None else ""
    tip = f"{bar.label}: {bar.start_ms:.3f}-{bar.end_ms:.3f} ms ({bar.end_ms - bar.start_ms:.3f} ms)"
    return (f'<rect class="bar {bar.kind}"{group} x="{x:.2f}" y="{y}" width="{w:.2f}" height="{lane_h - 8}" '
            f'fill="{colour}" stroke="white" stroke-width="0.3"><title>{escape(tip)}</title></rect>')


def comparison_svg(rows: Sequence[Comparison], metric: str, width: int = 640) -> str:
    """Horizontal bars, the plan first; the axis names the metric the objective optimises."""
    left, bar_h, top = 120, 24, 10
    plot = width - left - 90
    biggest = max((r.value for r in rows), default=1.0) or 1.0
    height = top + bar_h * len(rows) + 44
    unit = rows[0].unit if rows else ""
    better = "lower is better" if metric == "latency" else "higher is better"
    out = [f'<svg class="comparison" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="plan against baselines">']
    for k, r in enumerate(rows):
        y = top + k * bar_h
        w = plot * r.value / biggest
        colour = "#2ca02c" if k == 0 else "#aaaaaa"
        out.append(f'<g class="comparison-row"><text x="{left - 8}" y="{y + 15}" text-anchor="end" font-size="12">'
                   f'{escape(r.name)}</text><rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{bar_h - 8}" '
                   f'fill="{colour}"/><text x="{left + w + 6:.1f}" y="{y + 15}" font-size="12">{r.value:.3f} '
                   f'{escape(r.unit)}</text></g>')
    axis_y = top + bar_h * len(rows) + 4
    out.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + plot}" y2="{axis_y}" stroke="#333"/>')
    for t in _ticks(biggest, 5):
        x = left + plot * t / biggest
        out.append(f'<text x="{x:.1f}" y="{axis_y + 15}" text-anchor="middle" font-size="11">{t:g}</text>')
    out.append(f'<text x="{left + plot / 2}" y="{axis_y + 32}" text-anchor="middle" font-size="12">'
               f'{escape(metric)} ({escape(unit)}; {better})</text></svg>')
    return "".join(out)
