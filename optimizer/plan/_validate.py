"""An independent check of a plan.json against the model and the catalog.

It re-derives everything from the ONNX file and the rules, not from the planner's internals, so a
planner bug shows up as a violation here: unsupported placements, too many or non-convex loadables,
bad pool sizes, subgraphs that cannot run in order, inconsistent baselines or solver figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from optimizer.backends import backend_of
from optimizer.catalog import Catalog, Target
from optimizer.check import check_graph
from optimizer.enums import PRECISIONS, Precision
from optimizer.errors import BadInputError
from optimizer.ir import Graph, load_model
from optimizer.plan._types import PLAN_SCHEMA, Plan
from optimizer.solver import DUAL_STREAMS, OBJECTIVES
from optimizer.solver._multi import MULTI_ONLY

IO_FORMATS = ("dla_linear", "dla_hwc4", "chw16", "chw32", "chw4", "linear")
POOL_KEYS = ("dla_sram_bytes", "dla_local_dram_bytes", "dla_global_dram_bytes")
MAX_SUBGRAPH_ID = (1 << 20) - 1  # ids name engine files; no plan has a million subgraphs
MAX_DRAM_POOL_BYTES = 64 << 30  # the largest Jetson module's memory (AGX Orin 64GB)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def structure_problems(plan: Mapping[str, Any], catalog: Catalog, target: Target) -> list[str]:
    """What every later stage relies on, named by field: types, ranges, unique ids, each node once,
    devices that are this target's engines (in every subgraph, empty ones too), pools within limits.
    The model-dependent checks (validate_plan) run only on a plan that passes these."""
    problems: list[str] = []
    if not isinstance(plan.get("objective"), str) or plan["objective"] not in OBJECTIVES + MULTI_ONLY:
        problems.append(f"objective: {str(plan.get('objective'))[:40]!r} is not one of "
                        f"{list(OBJECTIVES + MULTI_ONLY)}")
    for key in ("solver", "predicted", "baselines"):
        if not isinstance(plan.get(key), dict):
            problems.append(f"{key}: must be an object")
    if isinstance(plan.get("solver"), dict):
        for key in ("bound_ms", "objective_ms"):
            if not _is_number(plan["solver"].get(key)):
                problems.append(f"solver.{key}: must be a finite number")
    if isinstance(plan.get("predicted"), dict) and not _is_number(plan["predicted"].get("latency_ms")):
        problems.append("predicted.latency_ms: must be a finite number")
    if isinstance(plan.get("baselines"), dict):
        for name, entry in plan["baselines"].items():
            if not isinstance(entry, dict) or not _is_number(entry.get("latency_ms")):
                problems.append(f"baselines.{name}.latency_ms: must be a finite number")
    if not isinstance(plan.get("request", {}), dict):
        problems.append("request: must be an object")
    model = plan.get("model")
    shapes = (model.get("input_shapes") if isinstance(model, dict) else None) or {}
    if not isinstance(shapes, dict) or not all(
            isinstance(v, list) and v and all(_is_int(d) and 1 <= d <= 1 << 31 for d in v) for v in shapes.values()):
        problems.append("model.input_shapes: must map input names to lists of dims >= 1")
    replication = plan.get("replication")
    if isinstance(replication, dict):
        split = replication.get("split")
        if not isinstance(split, dict) or not all(c in target.devices and _is_number(v) for c, v in split.items()):
            problems.append(f"replication.split: must map {target.id}'s engines {list(target.devices)} to shares")
    for index, layer in enumerate(plan.get("layers", [])):
        where = f"layers[{index}]"
        if not isinstance(layer, dict) or not isinstance(layer.get("node"), str):
            problems.append(f"{where}.node: must be a node name")
            continue
        if layer.get("device") not in target.devices:
            problems.append(f"{where}.device: {str(layer.get('device'))[:40]!r} is not one of {target.id}'s "
                            f"engines {list(target.devices)}")
        if layer.get("precision") not in PRECISIONS:
            problems.append(f"{where}.precision: {str(layer.get('precision'))[:20]!r} is not one of {PRECISIONS}")
        if not isinstance(layer.get("role", ""), str) or not isinstance(layer.get("sparsity", "dense"), str):
            problems.append(f"{where}: 'role' and 'sparsity' must be strings")
        if layer.get("cores") is not None and not _is_int(layer.get("cores")):
            problems.append(f"{where}.cores: must be an integer or null")
    ids: set[int] = set()
    owner: dict[str, int] = {}
    for index, sub in enumerate(plan.get("subgraphs", [])):
        where = f"subgraphs[{index}]"
        if not isinstance(sub, dict):
            problems.append(f"{where}: must be an object")
            continue
        sid = sub.get("id")
        if not isinstance(sid, int) or isinstance(sid, bool) or not 0 <= sid <= MAX_SUBGRAPH_ID:
            problems.append(f"{where}.id: {str(sid)[:30]} is not an integer in [0, {MAX_SUBGRAPH_ID}]")
        elif sid in ids:
            problems.append(f"{where}.id: {sid} is used by an earlier subgraph")
        else:
            ids.add(sid)
        if sub.get("device") not in target.devices:
            problems.append(f"{where}.device: {str(sub.get('device'))[:40]!r} is not one of {target.id}'s engines "
                            f"{list(target.devices)}")
        for key in ("nodes", "inputs", "outputs"):
            if not _names(sub.get(key)):
                problems.append(f"{where}.{key}: must be a list of names")
            elif len(set(sub[key])) != len(sub[key]):
                problems.append(f"{where}.{key}: lists a name twice")
        if _names(sub.get("nodes")):
            for name in sub["nodes"]:
                if name in owner and owner[name] != index:
                    problems.append(f"{where}.nodes: {name[:60]!r} is also in subgraphs[{owner[name]}]")
                owner.setdefault(name, index)
        if "precision" in sub and sub["precision"] not in (*PRECISIONS, "mixed"):
            problems.append(f"{where}.precision: {str(sub['precision'])[:20]!r} is not a precision")
        formats = sub.get("io_formats", {})
        if not isinstance(formats, dict) or not all(isinstance(k, str) and v in IO_FORMATS
                                                    for k, v in formats.items()):
            problems.append(f"{where}.io_formats: must map tensor names to one of {IO_FORMATS}")
        problems += _pool_problems(sub, where, target)
    return problems


def _pool_problems(sub: Mapping[str, Any], where: str, target: Target) -> list[str]:
    pools = sub.get("memory_pools")
    if pools is None and not str(sub.get("device", "")).startswith("dla"):
        return []
    if not isinstance(pools, dict) or set(pools) != set(POOL_KEYS):
        return [f"{where}.memory_pools: a DLA subgraph needs exactly {list(POOL_KEYS)}"]
    problems = []
    limits = {"dla_sram_bytes": int(target.figure("dla_sram_bytes")) if "dla_sram_bytes" in target.figures else 0,
              "dla_local_dram_bytes": MAX_DRAM_POOL_BYTES, "dla_global_dram_bytes": MAX_DRAM_POOL_BYTES}
    for key in POOL_KEYS:
        value = pools[key]
        if not _is_int(value) or not 0 < value <= limits[key]:
            problems.append(f"{where}.memory_pools.{key}: {str(value)[:30]} is not an integer in "
                            f"[1, {limits[key]}] ({target.id}'s limit)")
    needs = sub.get("memory_needs", {})
    if not isinstance(needs, dict) or not all(_is_number(v) for v in needs.values()):
        problems.append(f"{where}.memory_needs: must map pool names to numbers")
    return problems


def _reachable(graph: Graph, start: set[str], blocked: set[str] | None = None) -> set[str]:
    """Nodes reachable from the outputs of `start` (not entering `blocked`)."""
    seen: set[str] = set()
    stack = [c.name for n in start for t in graph.node(n).outputs for c in graph.consumers(t)]
    while stack:
        name = stack.pop()
        if name in seen or (blocked and name in blocked):
            continue
        seen.add(name)
        stack.extend(c.name for t in graph.node(name).outputs for c in graph.consumers(t))
    return seen


def validate_plan(plan: Plan | Mapping[str, Any], catalog: Catalog, model_path: str | None = None,
                  input_shapes: Mapping[str, tuple[int, ...]] | None = None, graph: Graph | None = None) -> list[str]:
    """Problems of a plan against its model; `graph` is the model already loaded by the caller. A parsed
    plan.json is checked field by field (structure_problems) before it is read as a Plan."""
    problems: list[str] = []
    document = plan.to_json() if isinstance(plan, Plan) else plan
    if document.get("schema") != PLAN_SCHEMA:
        return [f"schema is {document.get('schema')!r}, expected {PLAN_SCHEMA!r}"]
    target = catalog.target(document["target"])
    structure = structure_problems(document, catalog, target)
    if structure:
        return structure
    try:
        typed = plan if isinstance(plan, Plan) else Plan.from_json(document)
    except BadInputError as exc:
        return [exc.message]
    graph = graph or load_model(model_path or typed.model.path, input_shapes or typed.model.input_shapes)
    if graph.sha256 != typed.model.sha256:
        problems.append("model sha256 differs from the plan's")
    report = check_graph(graph, catalog, target.id)
    layers = typed.layers
    if [layer.node for layer in layers] != [n.name for n in graph.nodes]:
        problems.append("layers are not exactly one entry per ONNX node, in model order")
        return problems
    device_of: dict[str, str] = {}
    for layer in layers:
        node = graph.node(layer.node)
        verdict = report.verdict(node.name)
        device = layer.device.value
        kind = "dla" if device.startswith("dla") else device
        device_of[node.name] = device
        if device not in target.devices:
            problems.append(f"{node.name}: device {device} does not exist on {target.id}")
            continue
        if node.folded or layer.role == "constant" or layer.edit:
            continue  # an edited layer is checked on the edited model by `edgeplan edit`
        if not verdict.runs_on(kind, layer.precision):
            rules = sorted({v.rule for v in verdict.violations if v.accelerator == kind
                            and v.precision == layer.precision})
            problems.append(f"{node.name}: placed on {device}/{layer.precision} against {', '.join(rules)}")
        if kind == "npu":
            cores = int(target.features.get("npu_cores", 1))
            if not 1 <= (layer.cores or 0) <= cores:
                problems.append(f"{node.name}: {layer.cores} NPU cores, {target.id} has {cores}")
            if (layer.cores or 1) > 1 and not verdict.extra.get("multicore"):
                problems.append(f"{node.name}: split over cores but RKNN-MULTICORE does not allow {node.op_type}")
            if layer.sparsity != "dense":
                if layer.sparsity not in verdict.extra.get("sparsity_modes", ()):
                    problems.append(f"{node.name}: sparsity {layer.sparsity} not allowed (RKNN-SPARSE-*)")
                if layer.precision != "int8":
                    problems.append(f"{node.name}: sparsity needs INT8 (FP16 builds ignore it)")
    problems += _check_subgraphs(typed, graph, catalog, target, device_of)
    problems += _check_figures(typed, target)
    return problems


def _check_subgraphs(plan: Plan, graph: Graph, catalog: Catalog, target: Target, device_of: Mapping[str, str]
                     ) -> list[str]:
    problems = []
    compute = {layer.node for layer in plan.layers if layer.role != "constant"}
    seen: dict[str, int] = {}
    available = set(graph.inputs) | {t for t in graph.tensors if graph.is_constant(t)}
    dla = []
    for sub in plan.subgraphs:
        nodes = set(sub.nodes)
        for name in nodes:
            if name in seen:
                problems.append(f"{name} is in subgraphs {seen[name]} and {sub.id}")
            seen[name] = sub.id
            if name in compute and device_of[name] != sub.device:
                problems.append(f"{name}: layer device {device_of[name]} but subgraph {sub.id} is {sub.device}")
        for t in sub.inputs:
            if t not in available:
                problems.append(f"subgraph {sub.id} reads {t} before any earlier subgraph produces it")
        unknown = sorted(n for n in nodes if not graph.has_node(n))
        if unknown:
            problems.append(f"subgraph {sub.id} names node {unknown[0]!r}, which the model lacks")
            continue
        produced = {t for n in nodes for t in graph.node(n).outputs if t}
        for t in sub.outputs:
            if t not in produced:
                problems.append(f"subgraph {sub.id} lists output {t!r}, which none of its nodes produces")
        available |= produced
        if sub.device.startswith("dla"):
            dla.append(sub)
            members = nodes & compute
            outside = _reachable(graph, members) - nodes
            if members & _reachable(graph, outside):
                problems.append(f"DLA-LOADABLES: subgraph {sub.id} is not convex (a path leaves and re-enters)")
            if not _connected(graph, members):
                problems.append(f"DLA-LOADABLES: subgraph {sub.id} is not connected")
            pools = sub.memory_pools
            if not pools:
                problems.append(f"subgraph {sub.id}: memory_pools missing on a DLA subgraph")
            else:
                minimum = int(catalog.rule("DLA-POOL-POW2").params["min_bytes"])
                sizes = {key: getattr(pools, key) for key in POOL_KEYS}
                for name, value in sizes.items():
                    if value < minimum or value & (value - 1):
                        problems.append(f"DLA-POOL-POW2: subgraph {sub.id} {name} = {value}")
                needs = sub.memory_needs
                for name, need in ({"dla_local_dram_bytes": needs.dla_local_dram_bytes,
                                    "dla_global_dram_bytes": needs.dla_global_dram_bytes} if needs else {}).items():
                    if sizes[name] < need:
                        problems.append(f"DLA-POOL-POW2: subgraph {sub.id} {name} = {sizes[name]} is below "
                                        f"the {need} bytes it needs")
                sram = target.figure("dla_sram_bytes")
                if pools.dla_sram_bytes > sram:
                    problems.append(f"subgraph {sub.id}: SRAM pool {pools.dla_sram_bytes} exceeds {int(sram)}")
    pooled = sum(sub.memory_pools.dla_sram_bytes for sub in dla if sub.memory_pools)
    if catalog.sram_is_shared(target) and pooled > target.figure("dla_sram_bytes"):
        problems.append(f"DLA-SRAM-XAVIER: the loadables' SRAM pools sum to {pooled} bytes, more than the "
                        f"{int(target.figure('dla_sram_bytes'))} shared")
    missing = compute - set(seen)
    if missing:
        problems.append(f"{len(missing)} node(s) in no subgraph, e.g. {sorted(missing)[0]}")
    at_once = catalog.loadables_at_once(target)
    limit = plan.request.max_loadables or at_once
    if len(dla) > limit:
        problems.append(f"DLA-LOADABLES: {len(dla)} DLA subgraphs, limit {limit}")
    per_core = catalog.loadables_per_core()
    for core in sorted({sub.device for sub in dla}):
        on_core = sum(sub.device == core for sub in dla)
        if per_core is not None and on_core > per_core:
            problems.append(f"DLA-LOADABLES: {on_core} DLA subgraphs on {core}, limit {per_core} per core")
    if plan.objective == "dual-stream" and DUAL_STREAMS * len(dla) > at_once:
        problems.append(f"DLA-LOADABLES: dual-stream runs the plan's {len(dla)} DLA loadables once per stream, "
                        f"{DUAL_STREAMS * len(dla)} at once; at most {at_once}")
    return problems


def _connected(graph: Graph, members: set[str]) -> bool:
    if not members:
        return True
    start = min(members)
    seen, stack = set(), [start]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        node = graph.node(name)
        nxt = [c.name for t in node.outputs for c in graph.consumers(t)]
        producers = (graph.producer(t) for t in graph.runtime_inputs(node))
        nxt += [p.name for p in producers if p is not None]
        stack.extend(n for n in nxt if n in members)
    return seen == members


def _check_figures(plan: Plan, target: Target) -> list[str]:
    problems = []
    expected = {spec.name for spec in backend_of(target).baselines}
    if not expected <= set(plan.baselines):
        problems.append(f"baselines {sorted(plan.baselines)} lack {sorted(expected - set(plan.baselines))}")
    solver = plan.solver
    if solver.bound_ms > solver.objective_ms + 1e-9:
        problems.append("solver bound exceeds the objective")
    if solver.status == "OPTIMAL" and abs(solver.bound_ms - solver.objective_ms) > 1e-6:
        problems.append("status OPTIMAL but the bound differs from the objective")
    if plan.objective == "latency" and abs(solver.objective_ms - plan.predicted.latency_ms) > 1e-6:
        problems.append("latency objective differs from the predicted latency")
    request = plan.request
    unconstrained = not (request.pins or request.precision_pins or request.int8_budget
                         or request.dla_standalone or request.max_loadables
                         or request.latency_cap_ms)
    if plan.objective == "latency" and solver.status == "OPTIMAL" and unconstrained and \
            set(request.allowed_precisions) == set(Precision):
        best = min(b.latency_ms for b in plan.baselines.values())
        if plan.predicted.latency_ms > best + 1e-6:
            problems.append(f"an OPTIMAL plan ({plan.predicted.latency_ms} ms) is slower than a baseline "
                            f"({best} ms)")
    return problems
