"""The check result as the JSON of formats.md and as a terminal table."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from optimizer.backends import backend_of
from optimizer.catalog import Catalog, Rule, Target
from optimizer.check._sizes import size_warnings, unknown_sizes
from optimizer.check._verdicts import NodeVerdict, build_time_nodes, node_verdict
from optimizer.enums import PRECISIONS
from optimizer.ir import Graph

CHECK_SCHEMA = "edgeplan.check/v1"
REFUSAL_WARNING = "converter refuses the whole model"


@dataclass(frozen=True)
class CheckReport:
    graph: Graph
    target: Target
    catalog_sha256: str
    verdicts: tuple[NodeVerdict, ...]
    io: dict[str, Any]
    tensorrt_rules: str = ""  # the TensorRT major whose DLA rules were checked ("" for other families)
    refusing: frozenset[str] = frozenset()  # the family's rules whose violation stops the whole conversion

    def verdict(self, name: str) -> NodeVerdict:
        return self.verdicts[self.graph.node(name).index]


def check_graph(graph: Graph, catalog: Catalog, target_id: str) -> CheckReport:
    """Every node's verdict on every accelerator and precision of the target, with the rules behind each no."""
    target = catalog.target(target_id)
    rules: dict[tuple[str, str], tuple[Rule, ...]] = {}
    backend = backend_of(target)
    folded = build_time_nodes(graph) if backend.build_time_folding else frozenset()
    verdicts = tuple(node_verdict(graph, node, catalog, target, rules, folded) for node in graph.nodes)
    by_name = {v.name: v for v in verdicts}
    return CheckReport(graph=graph, target=target, catalog_sha256=catalog.sha256, verdicts=verdicts,
                       io=backend.boundary_facts(graph, catalog, target, by_name),
                       tensorrt_rules=backend.tensorrt_rules(catalog),
                       refusing=frozenset(r.id for r in catalog.family_of(target).rules if r.refuses))


def model_block(graph: Graph) -> dict[str, Any]:
    """The model a report or plan is of; `input_shapes` (when --input-shape fixed symbolic dims) lets a later
    export or rebuild read the model exactly as it was planned."""
    block: dict[str, Any] = {"path": graph.path, "sha256": graph.sha256, "num_nodes": len(graph.nodes)}
    fixed = sorted({tensor for tensor, _, _ in graph.fixed_dims})
    if fixed:
        block["input_shapes"] = {name: list(graph.tensors[name].shape or ()) for name in fixed}
    return block


def opset_conversion(graph: Graph) -> dict[str, Any] | None:
    """How the model was read when its opset was below 7 (None when it was read as it is)."""
    if graph.converted_from_opset is None:
        return None
    return {"from": graph.converted_from_opset, "to": graph.opset, "by": "onnx.version_converter"}


def conversion_warnings(graph: Graph) -> list[str]:
    if graph.converted_from_opset is None:
        return []
    return [f"the model declares opset {graph.converted_from_opset}; it was converted to opset {graph.opset} with "
            "onnx.version_converter and checked as converted (node names kept)"]


def refusals(report: CheckReport) -> list[dict[str, Any]]:
    """The violations that stop the vendor converter building the model at all (not one node's placement):
    per rule, how many nodes and the first of them, so a user knows before a conversion fails."""
    found: dict[str, dict[str, Any]] = {}
    for verdict in report.verdicts:
        for rule in {v.rule for v in verdict.violations} & report.refusing:
            entry = found.setdefault(rule, {"rule": rule, "nodes": 0, "first_node": verdict.name})
            entry["nodes"] += 1
    return sorted(found.values(), key=lambda e: e["rule"])


def refusal_warnings(report: CheckReport, entries: list[dict[str, Any]] | None = None) -> list[str]:
    """One line per refusing rule; `entries` when the caller already holds `refusals(report)`."""
    return [f"the {report.target.id} {REFUSAL_WARNING}: {e['rule']} at {e['first_node']}"
            + (f" and {e['nodes'] - 1} more nodes" if e["nodes"] > 1 else "")
            for e in (refusals(report) if entries is None else entries)]


def check_json(report: CheckReport) -> dict[str, Any]:
    """The report as edgeplan.check/v1 (formats.md), what `check --json` writes."""
    nodes = []
    for verdict in report.verdicts:
        entry: dict[str, Any] = {
            "name": verdict.name,
            "op_type": verdict.op_type,
            "supported": {k: dict(v) for k, v in verdict.supported.items()},
            "violations": [{"rule": v.rule, "accelerator": v.accelerator, "precision": v.precision,
                            "message": v.message} for v in verdict.violations],
            "layer_kind": verdict.kind,
        }
        entry.update(dict(verdict.extra))
        nodes.append(entry)
    return {
        "schema": CHECK_SCHEMA,
        "target": report.target.id,
        "model": model_block(report.graph),
        "catalog_sha256": report.catalog_sha256,
        **({"tensorrt_rules": report.tensorrt_rules} if report.tensorrt_rules else {}),
        "dynamic_dims": [{"tensor": t, "axis": a, "symbol": s} for t, a, s in report.graph.dynamic_dims],
        "unknown_sizes": unknown_sizes(report.graph),
        "opset_conversion": opset_conversion(report.graph),
        "summary": summary(report),
        "io": report.io,
        "nodes": nodes,
    }


def summary(report: CheckReport) -> dict[str, Any]:
    counts: dict[str, dict[str, int]] = {}
    for accelerator, precisions in report.target.precisions.items():
        counts[accelerator] = {p: sum(v.runs_on(accelerator, p) for v in report.verdicts) for p in precisions}
    blocking: Counter[str] = Counter()
    for verdict in report.verdicts:
        for rule in {v.rule for v in verdict.violations}:
            blocking[rule] += 1
    return {
        "nodes": len(report.verdicts),
        "constant_nodes": sum(v.kind == "constant" for v in report.verdicts),
        "runnable": counts,
        "blocking_rules": [{"rule": r, "nodes": n} for r, n in sorted(blocking.items(), key=lambda x: (-x[1], x[0]))],
        "refused_by": refusals(report),
    }


def render_table(report: CheckReport, max_rows: int = 60) -> str:
    """Summary, then one row per (node, rule) violation, merged across precisions that share it."""
    s = summary(report)
    target = report.target
    lines = [f"edgeplan check: {report.graph.path} on {target.id} ({target.name})",
             f"{s['nodes']} nodes ({s['constant_nodes']} folded constants)"]
    if report.graph.dynamic_dims:
        dims = ", ".join(f"{t}[{a}]={sym}" for t, a, sym in report.graph.dynamic_dims)
        lines.append(f"dynamic dims: {dims} (fix with --input-shape NAME=1x3x224x224)")
    lines.extend(f"warning: {w}" for w in conversion_warnings(report.graph))
    lines.extend(f"warning: {w}" for w in size_warnings(unknown_sizes(report.graph)))
    lines.extend(f"warning: {w}" for w in refusal_warnings(report, s["refused_by"]))
    lines.append("")
    lines.append(f"{'accelerator':<12}" + "".join(f"{p:>8}" for p in PRECISIONS))
    for accelerator, per in s["runnable"].items():
        cells = "".join(f"{per[p]:>8}" if p in per else f"{'-':>8}" for p in PRECISIONS)
        lines.append(f"{accelerator:<12}{cells}")
    lines.append("")
    if s["blocking_rules"]:
        top = ", ".join(f"{b['rule']} ({b['nodes']})" for b in s["blocking_rules"][:6])
        lines.append(f"top blocking rules (nodes): {top}")
        lines.append("")
    rows: dict[tuple[str, str, str], list[str]] = {}
    for verdict in report.verdicts:
        for v in verdict.violations:
            rows.setdefault((verdict.name, v.rule, v.message), []).append(v.precision)
    if not target.has_accelerator:
        lines.append(f"{target.id} has no {target.accelerator.upper()}: every node runs on the "
                     f"{target.fallback.upper()}")
        return "\n".join(lines) + "\n"
    if not rows:
        lines.append(f"every node meets every {target.accelerator.upper()} rule")
        return "\n".join(lines) + "\n"
    width = min(max(len(k[0]) for k in rows), 48)
    lines.append(f"{'node':<{width}}  {'precision':<10} {'rule':<24} value")
    for count, ((node, rule, message), precisions) in enumerate(rows.items()):
        if count == max_rows:
            lines.append(f"... {len(rows) - max_rows} more (use --json FILE for all)")
            break
        shown = node if len(node) <= width else "…" + node[-(width - 1):]
        lines.append(f"{shown:<{width}}  {','.join(precisions):<10} {rule:<24} {message}")
    return "\n".join(lines) + "\n"
