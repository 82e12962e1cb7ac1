"""The human report of a plan: a terminal summary and a Markdown file."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from optimizer.fileio import atomic_write_text, write_json
from optimizer.plan._build import Planned
from optimizer.plan._html import plan_html
from optimizer.plan._views import ratios


def write_plan_files(planned: Planned, folder: Path) -> None:
    """plan.json, run.json and report.md: what `optimize` and every batch job leave behind."""
    write_json(folder / "plan.json", planned.plan)
    write_json(folder / "run.json", planned.run)
    atomic_write_text(folder / "report.md", markdown_report(planned))
    atomic_write_text(folder / "report.html", plan_html(planned))


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


def terminal_summary(planned: Planned, out_dir: str) -> str:
    plan = planned.plan
    lines = [f"edgeplan optimize: {plan['model']['path']} on {plan['target']} ({plan['objective']})",
             f"solver {plan['solver']['status']}: {plan['solver']['objective_ms']:.3f} ms objective, "
             f"bound {plan['solver']['bound_ms']:.3f} ms, {plan['solver']['groups']} layer groups"]
    pred = plan["predicted"]
    lines.append(f"predicted latency {pred['latency_ms']:.3f} ms, throughput {pred['throughput_fps']:.1f} fps")
    for name, base in plan["baselines"].items():
        lines.append(f"  vs {name:<12} {base['latency_ms']:.3f} ms  ({ratios(base)})")
    devices = Counter(layer["device"] for layer in plan["layers"] if layer["role"] != "constant")
    lines.append("nodes per device: " + ", ".join(f"{d} {n}" for d, n in sorted(devices.items())))
    lines.append(f"{len(plan['subgraphs'])} subgraph(s), {len(plan['transfers'])} transfer(s)")
    lines.append("where the time goes: " + ", ".join(f"{k} {v:.3f} ms" for k, v in _where_time_goes(planned) if v))
    for warning in plan.get("warnings", []):
        lines.append(f"warning: {warning}")
    lines.append(f"wrote {out_dir}/plan.json, {out_dir}/run.json, {out_dir}/report.md, {out_dir}/report.html")
    return "\n".join(lines) + "\n"


def markdown_report(planned: Planned) -> str:
    plan = planned.plan
    graph = planned.report.graph
    target = planned.report.target
    out = [f"# edgeplan plan: `{plan['model']['path']}` on {target.id}", "",
           f"Target: {target.name}. Objective: {plan['objective']}. Solver: {plan['solver']['status']} "
           f"(objective {plan['solver']['objective_ms']:.4f} ms, proven bound {plan['solver']['bound_ms']:.4f} ms, "
           f"gap {plan['solver']['gap']:.2%}).", ""]
    pred = plan["predicted"]
    out += ["## Prediction and baselines", "", "| plan | latency (ms) | throughput (fps) | edgeplan's gain |",
            "|---|---:|---:|---|",
            f"| edgeplan | {pred['latency_ms']:.4f} | {pred['throughput_fps']:.1f} | - |"]
    for name, base in plan["baselines"].items():
        fps = base.get("pipelined_fps", base["throughput_fps"])
        out.append(f"| {name} | {base['latency_ms']:.4f} | {fps:.1f} | {ratios(base)} |")
    out += ["", "## Where the time goes", "", "| part | ms |", "|---|---:|"]
    out += [f"| {k} | {v:.4f} |" for k, v in _where_time_goes(planned)]
    if plan.get("warnings"):
        out += ["", "## Warnings", ""] + [f"- {w}" for w in plan["warnings"]]
    out += ["", "## Subgraphs", "", "| id | device | precision | nodes | inputs | outputs | formats |",
            "|---:|---|---|---:|---|---|---|"]
    for s in plan["subgraphs"]:
        fmts = ", ".join(f"{k}: {v}" for k, v in s.get("io_formats", {}).items())
        out.append(f"| {s['id']} | {s['device']} | {s['precision']} | {len(s['nodes'])} | "
                   f"{', '.join(s['inputs'][:3])}{' ...' if len(s['inputs']) > 3 else ''} | "
                   f"{', '.join(s['outputs'][:3])}{' ...' if len(s['outputs']) > 3 else ''} | {fmts} |")
    if plan["transfers"]:
        out += ["", "## Transfers", "", "| tensor | from | to | bytes | format | ms |", "|---|---|---|---:|---|---:|"]
        out += [f"| {t['tensor']} | {t['from']} | {t['to']} | {t['bytes']} | {t['format']} | {t['latency_ms']:.4f} |"
                for t in plan["transfers"]]
    fallback = target.fallback
    off = [layer for layer in plan["layers"] if layer["device"] == fallback and layer["role"] == "anchor"]
    if off:
        out += ["", f"## Why these layers are on the {fallback.upper()}", "", "| node | op | reason |", "|---|---|---|"]
        for layer in off:
            out.append(f"| {layer['node']} | {layer['op_type']} | {_why_not(planned, layer['node'])} |")
    from optimizer.edits import candidate_edits

    boundary = sorted({t["tensor"] for t in plan["transfers"]})
    edits = candidate_edits(planned.report, None, boundary)
    if edits:
        out += ["", "## Suggested model edits", "",
                "Predicted gains: `edgeplan suggest MODEL --target T` (re-plans with each edit); apply with "
                "`edgeplan edit MODEL --apply ID --out NEW.onnx`.", "", "| edit | rule | rewrite | rationale |",
                "|---|---|---|---|"]
        out += [f"| `{e.id}` | {e.rule} | {'yes' if e.applicable else 'advice'} | {e.rationale} |" for e in edits]
    out += ["", "## Layers", "", "| node | op | device | precision | cores | sparsity | ms | subgraph |",
            "|---|---|---|---|---|---|---:|---:|"]
    for layer in plan["layers"]:
        if layer["role"] == "constant":
            continue
        out.append(f"| {layer['node']} | {layer['op_type']} | {layer['device']} | {layer['precision']} | "
                   f"{layer['cores'] if layer['cores'] is not None else ''} | {layer['sparsity']} | "
                   f"{layer['latency_ms']:.4f} | {layer['subgraph']} |")
    out.append("")
    out.append(f"{len(graph.nodes)} ONNX nodes in {plan['solver']['groups']} layer groups; folded constants omitted.")
    return "\n".join(out) + "\n"


