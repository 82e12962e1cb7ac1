"""Unknown sizes, said out loud: which verdicts rest on dims that are dynamic, data-decided or unresolved.

A verdict (and every latency built on it) that touched such a dim is a guess: unknown sizes count as zero
elements. check, optimize and batch report this block and its warning lines instead of a plain "ok".
"""

from __future__ import annotations

from typing import Any

from optimizer.ir import Graph

CAUSES = ("dynamic", "unresolved", "data-dependent")
MAX_EXAMPLES = 5


def _causes_of(graph: Graph, tensors: tuple[str, ...]) -> list[tuple[str, str]]:
    out = []
    for name in tensors:
        info = graph.tensors.get(name) if name else None
        if name and (info is None or not info.is_static):
            out.append((name, graph.shape_causes.get(name, "unresolved")))
    return out


def unknown_sizes(graph: Graph) -> dict[str, Any]:
    """Per cause: tensors, nodes whose verdict touched one, and where the first ones start."""
    tensors = {c: 0 for c in CAUSES}
    for name, info in graph.tensors.items():
        if not info.is_static:
            tensors[graph.shape_causes.get(name, "unresolved")] += 1
    nodes = {c: 0 for c in CAUSES}
    origins: dict[str, list[str]] = {c: [] for c in CAUSES}
    examples: dict[str, list[dict[str, str]]] = {c: [] for c in CAUSES}
    for node in graph.nodes:
        if node.folded:
            continue
        seen = set()
        for tensor, cause in _causes_of(graph, (*graph.runtime_inputs(node), *node.outputs)):
            if cause in seen:
                continue
            seen.add(cause)
            nodes[cause] += 1
            origin = graph.shape_origins.get(tensor, "")
            if origin and origin not in origins[cause]:
                origins[cause].append(origin)
            if len(examples[cause]) < MAX_EXAMPLES:
                examples[cause].append({"node": node.name, "tensor": tensor, "origin": origin})
    return {
        "needs_shapes": bool(nodes["dynamic"] or nodes["unresolved"]),
        "dynamic_inputs": [{"tensor": t, "axis": a, "symbol": s} for t, a, s in graph.dynamic_dims],
        "tensors": tensors,
        "nodes": nodes,
        "origins": {c: origins[c] for c in CAUSES},
        "examples": examples,
    }


def _listed(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(f"'{n}'" for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def size_warnings(block: dict[str, Any]) -> list[str]:
    """One line per cause that some verdict depended on."""
    lines = []
    nodes, origins = block["nodes"], block["origins"]
    if nodes["dynamic"]:
        dims = ", ".join(f"{d['tensor']}[{d['axis']}]={d['symbol']}" for d in block["dynamic_inputs"])
        lines.append(f"{nodes['dynamic']} node verdict(s) depend on dynamic input dims ({dims}): sizes, placement "
                     "and latency there are not known; fix them with --input-shape NAME=1x3x224x224")
    if nodes["unresolved"]:
        lines.append(f"{nodes['unresolved']} node verdict(s) depend on dims that shape inference could not resolve "
                     f"(from node {_listed(origins['unresolved'])}); their sizes count as zero")
    if nodes["data-dependent"]:
        lines.append(f"{nodes['data-dependent']} node verdict(s) depend on sizes the data decides at run time (from "
                     f"node {_listed(origins['data-dependent'])}): no DLA or NPU builds them (static sizes only) and "
                     "their latency counts zero elements")
    return lines


def size_note(block: dict[str, Any]) -> str:
    """A short summary for a table cell: counts of affected nodes per cause."""
    return "; ".join(f"{cause}: {block['nodes'][cause]} nodes" for cause in CAUSES if block["nodes"][cause])
