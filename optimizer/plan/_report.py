"""The human report of a plan: a terminal summary and a Markdown file."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from optimizer.fileio import dumps_json, write_file_set
from optimizer.plan._build import Planned
from optimizer.plan._html import plan_html
from optimizer.plan._types import Predicted
from optimizer.plan._views import ratios, within_band
from optimizer.rewrite import candidate_edits


def plan_files(planned: Planned) -> dict[str, str]:
    """plan.json, run.json, report.md and report.html: what `optimize` and every batch job leave behind."""
    return {"plan.json": dumps_json(planned.plan.to_json()), "run.json": dumps_json(planned.run),
            "report.md": markdown_report(planned), "report.html": plan_html(planned)}


def write_plan_files(planned: Planned, folder: Path) -> None:
    """All four or none (a crash or a full disk never leaves a new plan.json beside an old report)."""
    write_file_set(folder, plan_files(planned))


def _why_not(planned: Planned, node: str) -> str:
    accelerator = planned.report.target.accelerator
    verdict = planned.report.verdict(node)
    rules = sorted({v.rule for v in verdict.violations if v.accelerator == accelerator})
    if rules:
        by_rule: dict[str, str] = {}
        for v in verdict.violations:
            if v.accelerator == accelerator:
                by_rule.setdefault(v.rule, v.message)
        return "; ".join(f"{r}: {by_rule[r]}" for r in rules)
    if any(verdict.runs_on(accelerator, p) for p in planned.report.target.precisions[accelerator]):
        return f"{accelerator.upper()}-capable; the latency model finds it faster here (with transfers)"
    return "-"


def _where_time_goes(planned: Planned) -> list[tuple[str, float]]:
    b = planned.breakdown
    by_device: dict[str, float] = defaultdict(float)
    for g, ns in enumerate(b.group_ns):
        by_device[planned.placements[g].device] += ns
    rows = [(f"layers on {d}", ns / 1e6) for d, ns in sorted(by_device.items())]
    rows.append(("transfers", b.transfer_ns / 1e6))
    rows.append(("precision reformats", sum(c[2] for c in b.precision_changes) / 1e6))
    rows.append(("loadable launches", b.launch_ns / 1e6))
    return rows


def _likely(pred: Predicted) -> str:
    band = pred.latency_band_ms
    return f" (likely {band.low:.4g}-{band.high:.4g} ms)" if band else ""


def _energy(pred: Predicted) -> str:
    """", energy 11.2 mJ, GPU busy 82%" where the plan has them (Jetson targets with power figures)."""
    parts = []
    if pred.energy_mj is not None:
        parts.append(f"energy {pred.energy_mj:.3f} mJ")
    if pred.gpu_busy_share is not None:
        parts.append(f"GPU busy {pred.gpu_busy_share:.0%}")
    return (", " + ", ".join(parts)) if parts else ""


def terminal_summary(planned: Planned, out_dir: str) -> str:
    plan = planned.plan
    lines = [f"edgeplan optimize: {plan.model.path} on {plan.target} ({plan.objective})",
             f"solver {plan.solver.status}: {plan.solver.objective_ms:.3f} ms objective, "
             f"bound {plan.solver.bound_ms:.3f} ms, {plan.solver.groups} layer groups"]
    pred = plan.predicted
    lines.append(f"predicted latency {pred.latency_ms:.3f} ms{_likely(pred)}, "
                 f"throughput {pred.throughput_fps:.1f} fps" + _energy(pred))
    if plan.replication:
        lines.append(f"replication: {plan.replication.why}")
    for name, base in plan.baselines.items():
        lines.append(f"  vs {name:<12} {base.latency_ms:.3f} ms  ({ratios(base)}{within_band(pred, base)})")
    devices = Counter(layer.device.value for layer in plan.layers if layer.role != "constant")
    lines.append("nodes per device: " + ", ".join(f"{d} {n}" for d, n in sorted(devices.items())))
    lines.append(f"{len(plan.subgraphs)} subgraph(s), {len(plan.transfers)} transfer(s)")
    lines.append("where the time goes: " + ", ".join(f"{k} {v:.3f} ms" for k, v in _where_time_goes(planned) if v))
    for warning in plan.warnings:
        lines.append(f"warning: {warning}")
    lines.append(f"wrote {out_dir}/plan.json, {out_dir}/run.json, {out_dir}/report.md, {out_dir}/report.html")
    return "\n".join(lines) + "\n"


def markdown_report(planned: Planned) -> str:
    plan = planned.plan
    graph = planned.report.graph
    target = planned.report.target
    out = [f"# edgeplan plan: `{plan.model.path}` on {target.id}", "",
           f"Target: {target.name}. Objective: {plan.objective}. Solver: {plan.solver.status} "
           f"(objective {plan.solver.objective_ms:.4f} ms, proven bound {plan.solver.bound_ms:.4f} ms, "
           f"gap {plan.solver.gap:.2%}).", ""]
    pred = plan.predicted
    band = pred.latency_band_ms
    out += ["## Prediction and baselines", ""]
    if band:
        out += [f"Predicted latency {pred.latency_ms:.4f} ms, likely {band.low:.4f}-{band.high:.4f} ms: "
                f"the 10th-90th percentile of observed/predicted over {band.rows} comparable published rows "
                f"({band.scope}), each predicted by a fit that never saw its source.", ""]
    else:
        out += ["No error band: the latency profile was calibrated without cross-validation.", ""]
    if _energy(pred):
        out += [f"Per frame:{_energy(pred)[1:]} (constraints/power.toml; the power shares are assumptions).", ""]
    if plan.replication:
        out += [f"Replication against pipelining: {plan.replication.why}.", ""]
    out += ["| plan | latency (ms) | throughput (fps) | edgeplan's gain |", "|---|---:|---:|---|",
            f"| edgeplan | {pred.latency_ms:.4f} | {pred.throughput_fps:.1f} | - |"]
    notes = []
    for name, base in plan.baselines.items():
        fps = base.throughput_fps if base.pipelined_fps is None else base.pipelined_fps
        out.append(f"| {name} | {base.latency_ms:.4f} | {fps:.1f} | {ratios(base)} |")
        if band and base.speedup and within_band(pred, base):
            notes.append(f"- The latency gain over {name} (x{base.speedup:.2f}) is smaller than the error band "
                         f"(x{band.ratio_high / band.ratio_low:.2f}): measure both before relying on it.")
    if notes:
        out += ["", *notes]
    out += ["", "## Where the time goes", "", "| part | ms |", "|---|---:|"]
    out += [f"| {k} | {v:.4f} |" for k, v in _where_time_goes(planned)]
    if plan.warnings:
        out += ["", "## Warnings", ""] + [f"- {w}" for w in plan.warnings]
    out += ["", "## Subgraphs", "", "| id | device | precision | nodes | inputs | outputs | formats |",
            "|---:|---|---|---:|---|---|---|"]
    for s in plan.subgraphs:
        fmts = ", ".join(f"{k}: {v}" for k, v in (s.io_formats or {}).items())
        out.append(f"| {s.id} | {s.device} | {s.precision} | {len(s.nodes)} | "
                   f"{', '.join(s.inputs[:3])}{' ...' if len(s.inputs) > 3 else ''} | "
                   f"{', '.join(s.outputs[:3])}{' ...' if len(s.outputs) > 3 else ''} | {fmts} |")
    if plan.transfers:
        out += ["", "## Transfers", "", "| tensor | from | to | bytes | format | ms |", "|---|---|---|---:|---|---:|"]
        out += [f"| {t.tensor} | {t.src} | {t.dst} | {t.bytes} | {t.format} | {t.latency_ms:.4f} |"
                for t in plan.transfers]
    fallback = target.fallback
    off = [layer for layer in plan.layers if layer.device == fallback and layer.role == "anchor"]
    if off and not target.has_accelerator:
        out += ["", f"## Why these layers are on the {fallback.upper()}", "",
                f"{target.id} has no {target.accelerator.upper()}: every layer runs on the {fallback.upper()}."]
    elif off:
        out += ["", f"## Why these layers are on the {fallback.upper()}", "", "| node | op | reason |", "|---|---|---|"]
        for layer in off:
            out.append(f"| {layer.node} | {layer.op_type} | {_why_not(planned, layer.node)} |")
    boundary = sorted({t.tensor for t in plan.transfers})
    edits = candidate_edits(planned.report, None, boundary)
    if edits:
        out += ["", "## Suggested model edits", "",
                "Predicted gains: `edgeplan suggest MODEL --target T` (re-plans with each edit); apply with "
                "`edgeplan edit MODEL --apply ID --out NEW.onnx`.", "", "| edit | rule | rewrite | rationale |",
                "|---|---|---|---|"]
        out += [f"| `{e.id}` | {e.rule} | {'yes' if e.applicable else 'advice'} | {e.rationale} |" for e in edits]
    out += ["", "## Layers", "", "| node | op | device | precision | cores | sparsity | ms | subgraph |",
            "|---|---|---|---|---|---|---:|---:|"]
    for layer in plan.layers:
        if layer.role == "constant":
            continue
        out.append(f"| {layer.node} | {layer.op_type} | {layer.device} | {layer.precision} | "
                   f"{layer.cores if layer.cores is not None else ''} | {layer.sparsity} | "
                   f"{layer.latency_ms:.4f} | {layer.subgraph} |")
    out.append("")
    out.append(f"{len(graph.nodes)} ONNX nodes in {plan.solver.groups} layer groups; folded constants omitted.")
    return "\n".join(out) + "\n"


