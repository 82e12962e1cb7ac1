"""Edits as planner decisions: each applicable edit adds options to the group it rewrites.

An edit option's cost is the edited subgraph's cost: the rewritten nodes on the chosen device where
the rules allow, helper nodes that are no accelerator layer (Pad, Slice) on the fallback device, and
the transfers between them. Choosing such an option is choosing the edit; the solver weighs it
against the unedited options like any other (`optimize --with-edits`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import onnx

from optimizer.catalog import Catalog
from optimizer.check import CheckReport, check_graph
from optimizer.enums import PRECISIONS
from optimizer.errors import EdgeplanError
from optimizer.fusion import build_groups
from optimizer.ir import load_model
from optimizer.ir._safety import parse_model, read_model_bytes
from optimizer.latency import LatencyModel, Option, group_options
from optimizer.rewrite._rewrite import apply_edits, candidate_edits

PLANNED_KINDS = ("explicit-pad", "split-pool", "split-kernel")


def add_edit_options(model: LatencyModel, report: CheckReport, catalog: Catalog, model_path: str) -> list[str]:
    """Registers edit options on the latency model; returns the edit ids that became decisions."""
    graph = report.graph
    target = model.target
    proto = parse_model(read_model_bytes(Path(model_path)), model_path)
    used = []
    for edit in candidate_edits(report):
        if not edit.applicable or edit.kind not in PLANNED_KINDS:
            continue
        g = model.groups.node_group.get(edit.target, -1)
        if g < 0:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "edited.onnx"
            try:
                onnx.save(apply_edits(proto, graph, [edit]), path)
                edited_graph = load_model(path)
            except EdgeplanError:
                continue
        edited_report = check_graph(edited_graph, catalog, target.id)
        edited_groups = build_groups(edited_report)
        region = set(model.groups.groups[g].members) | {n.name for n in edited_graph.nodes
                                                         if not graph.has_node(n.name)}
        region_groups = sorted({edited_groups.node_group[n] for n in region if n in edited_groups.node_group
                                and edited_groups.node_group[n] >= 0})
        if any(set(edited_groups.groups[r].members) - region for r in region_groups):
            continue  # the edited grouping reaches beyond the rewrite: no isolated cost
        edited_model = LatencyModel(edited_groups, catalog, target, model.profile, model.sram_bytes,
                                    io=edited_report.io, standalone=model.capability == "standalone")
        anchor_group = edited_groups.node_group[edit.target]
        added = False
        for precision in target.precisions.get(target.accelerator, ()):
            device = target.accelerator
            if (device, precision) not in edited_groups.groups[anchor_group].support:
                continue
            cost = _region_cost(edited_model, region_groups, device, precision)
            model.edited[(g, Option(device, precision, edit=edit.id))] = cost
            added = True
        if added:
            used.append(edit.id)
    return used


def _region_cost(model: LatencyModel, region: list[int], device: str, precision: str) -> int:
    allowed = frozenset(PRECISIONS)
    placed: dict[int, Option] = {}
    for r in region:
        group = model.groups.groups[r]
        if (device, precision) in group.support:
            placed[r] = Option(device, precision)
        else:
            fallback = [o for o in group_options(model, r, allowed) if o.device == model.target.fallback]
            placed[r] = min(fallback, key=lambda o: (model.option_ns(group, o), o.precision))
    cost = sum(model.option_ns(model.groups.groups[r], placed[r]) for r in region)
    for edge in model.groups.edges:
        if edge.src in placed and edge.dst in placed and placed[edge.src].device != placed[edge.dst].device:
            cost += model.transfer(edge.tensor, placed[edge.src].device, placed[edge.dst].device,
                                   placed[edge.src].precision)[1]
    return cost
