"""A written plan.json back into everything its page needs, without solving again.

A study's best plan is the plan its best trial stored (never re-solved, so that it stays the trial's); its
page needs the groups, the latency model and the baselines, which follow from the model, the target and the
request the plan records. Each group's placement is read from its anchor layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optimizer.catalog import DEFAULT_TENSORRT, Catalog, load_catalog
from optimizer.check import check_graph
from optimizer.enums import PRECISIONS
from optimizer.errors import BadInputError
from optimizer.fusion import build_groups
from optimizer.ir import load_model
from optimizer.latency import LatencyModel, Option, Placement, evaluate, load_profile
from optimizer.plan._baselines import baselines
from optimizer.plan._build import Planned
from optimizer.plan._subgraphs import build_subgraphs
from optimizer.plan._types import Layer, Plan


def _placement(layer: Layer, loadable: int) -> Placement:
    device = layer.device.value
    kind = "dla" if device.startswith("dla") else device
    option = Option(kind, layer.precision.value, cores=layer.cores or 1, sparsity=layer.sparsity, edit=layer.edit)
    return Placement(option, core=int(device[3:]) if kind == "dla" else 0, loadable=loadable if kind == "dla" else -1)


def planned_from_plan(plan: Plan | Mapping[str, Any], *, input_shapes: Mapping[str, tuple[int, ...]] | None = None,
                      profile_path: str | None = None, catalog: Catalog | None = None) -> Planned:
    plan = plan if isinstance(plan, Plan) else Plan.from_json(plan)
    tensorrt = plan.tensorrt_rules or DEFAULT_TENSORRT  # the rule set the plan was made under
    if catalog is None or catalog.tensorrt != tensorrt:
        catalog = load_catalog(tensorrt=tensorrt)
    target = catalog.target(plan.target)
    graph = load_model(plan.model.path, input_shapes or plan.model.input_shapes)
    report = check_graph(graph, catalog, target.id)
    groups = build_groups(report)
    request = plan.request
    model = LatencyModel(groups, catalog, target, load_profile(target.family, profile_path),
                         request.sram_bytes, io=report.io, standalone=request.dla_standalone,
                         loadable_sram=request.sram_per_loadable)
    loadable_of: dict[int | None, int] = {s.id: -1 if s.loadable is None else s.loadable for s in plan.subgraphs}
    anchors = plan.anchors()
    if sorted(anchors) != list(range(len(groups.groups))):
        raise BadInputError(f"the plan's layer groups ({len(anchors)}) are not the model's ({len(groups.groups)})",
                            file=plan.model.path)
    placements = tuple(_placement(anchors[g], loadable_of.get(anchors[g].subgraph, -1))
                       for g in range(len(groups.groups)))
    limit = int(request.max_loadables or catalog.rule("DLA-LOADABLES").params["max"])
    allowed = frozenset(request.allowed_precisions or PRECISIONS)
    return Planned(plan=plan, run={}, report=report, groups=groups, model=model, placements=placements,
                   breakdown=evaluate(model, placements), subgraphs=build_subgraphs(groups, placements),
                   baselines=baselines(model, limit, allowed))
