"""optimize(): model -> check -> groups -> latency model -> CP-SAT -> plan.json, run.json, report."""

from __future__ import annotations

import logging
import os
import platform
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from optimizer import __version__
from optimizer.backends import backend_of
from optimizer.catalog import Catalog, Target, load_catalog
from optimizer.check import (
    CheckReport,
    check_graph,
    conversion_warnings,
    model_block,
    opset_conversion,
    refusal_warnings,
    size_warnings,
    unknown_sizes,
)
from optimizer.enums import PRECISIONS
from optimizer.errors import BadInputError, InfeasibleError
from optimizer.fileio import json_values
from optimizer.fusion import GroupGraph, build_groups
from optimizer.ir import BYTES_PER_ELEMENT, Graph, load_model
from optimizer.latency import Breakdown, LatencyModel, Placement, evaluate, load_profile, tensor_routes
from optimizer.latency._profile import band_json
from optimizer.plan._baselines import Baselines, baselines, gpu_only
from optimizer.plan._subgraphs import Subgraph, build_subgraphs
from optimizer.plan._types import PLAN_SCHEMA, Plan
from optimizer.rewrite import add_edit_options
from optimizer.solver import (
    INTERVAL_MAX_GROUPS,
    LP_MAX_GROUPS,
    WALL_FACTOR,
    Budget,
    Outcome,
    PlanModel,
    PlanRequest,
    SolveResult,
    Stop,
    balanced_hint,
    border_descent,
    check_target,
    core_bound_ns,
    decomposed_solve,
    interval_hint,
    loadable_limit,
    lower_bound_ns,
    region_bound_ns,
    throughput_lp_ns,
)

log = logging.getLogger(__name__)
PHASES = ("load", "check", "latency model and baselines", "solve", "plan")
TRANSFER_WARNING_PERCENT = 20  # seed 004 §七.4: DMA copies of 20% of the total or more (20％以上) mean a poor partition
# Above this many layer groups the exact CP-SAT model takes longer to build and solve than any time limit
# here allows (1,000 groups: 6.6 s of solving; 5,000: 105 s in all, on this 2-core machine); the best baseline
# is handed over.
MAX_EXACT_GROUPS = 2000


@dataclass(frozen=True)
class Planned:
    """Everything one optimize run produced, before anything is written."""

    plan: Plan
    run: dict[str, Any]
    report: CheckReport
    groups: GroupGraph
    model: LatencyModel
    placements: tuple[Placement, ...]
    breakdown: Breakdown
    subgraphs: tuple[Subgraph, ...]
    baselines: Baselines


def check_pool_size(value: int, what: str, catalog: Catalog) -> None:
    """DLA-POOL-POW2: every DLA memory pool is a power of two of at least 4 KiB."""
    minimum = int(catalog.rule("DLA-POOL-POW2").params["min_bytes"])
    if value < minimum or value & (value - 1):
        raise BadInputError(f"DLA-POOL-POW2: {what} = {value} bytes; pools must be powers of two >= {minimum}")


def check_loadable_sram(sizes: tuple[int, ...], catalog: Catalog, target: Target) -> None:
    """Each pool is a power of two within the per-core SRAM (DLA-SRAM-ORIN); on Xavier the pools share one
    SRAM, so together they must fit it (DLA-SRAM-XAVIER)."""
    for size in sizes:
        check_pool_size(size, "dla_sram_bytes", catalog)
    budget = int(target.figure("dla_sram_bytes"))
    if any(size > budget for size in sizes):
        raise BadInputError(f"DLA-SRAM-{target.generation.upper()}: a loadable SRAM pool of {max(sizes)} bytes "
                            f"exceeds the {budget} bytes of {target.id}")
    if catalog.sram_is_shared(target) and sum(sizes) > budget:
        raise BadInputError(f"DLA-SRAM-XAVIER: loadable SRAM pools sum to {sum(sizes)} bytes; the {budget} bytes "
                            f"of {target.id} are shared by every loadable")


def _standalone_blockers(report: CheckReport, groups: GroupGraph) -> list[str]:
    found = []
    for group in groups.groups:
        if any(acc == "dla" for acc, _ in group.support):
            continue
        for member in group.members:
            rules = sorted({v.rule for v in report.verdict(member).violations if v.accelerator == "dla"})
            found.append(f"{member} ({', '.join(rules) or 'not DLA'})")
    return found


def check_pools(request: PlanRequest, catalog: Catalog, target: Target) -> None:
    """The SRAM pools a request names are buildable ones (DLA-POOL-POW2, DLA-SRAM-ORIN/XAVIER)."""
    if request.sram_bytes is not None and backend_of(target).managed_sram:
        check_pool_size(request.sram_bytes, "dla_sram_bytes", catalog)
    if request.sram_per_loadable:
        if not backend_of(target).managed_sram or not target.has_accelerator:
            raise BadInputError(f"per-loadable SRAM pools apply to Jetson targets with a DLA, not {target.id}")
        check_loadable_sram(request.sram_per_loadable, catalog, target)


def optimize(model_path: str, target_id: str, request: PlanRequest, *,
             input_shapes: Mapping[str, tuple[int, ...]] | None = None, profile_path: str | None = None,
             explain: bool = False, catalog: Catalog | None = None, started: float | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Planned:
    """Plans one model on one target: the exact CP-SAT plan, or the best one found within
    `request.time_limit_s` (wall-clock seconds from `started`, default now, for the whole call), or the
    best baseline when nothing is found in time; `Planned.plan` is plan.json, `Planned.run` run.json.
    `progress(step, steps, phase)` is called as each of PHASES begins (and once at the end)."""
    started = time.monotonic() if started is None else started

    def phase(step: int) -> None:
        if step:
            log.debug("%s done after %.2f s", PHASES[step - 1], time.monotonic() - started)
        if progress:
            progress(step, len(PHASES), PHASES[step] if step < len(PHASES) else "done")

    phase(0)
    timings: dict[str, float] = {}
    if catalog is None or catalog.tensorrt != request.tensorrt:
        catalog = load_catalog(tensorrt=request.tensorrt)
    target = catalog.target(target_id)
    check_target(request, target)
    profile = load_profile(target.family, profile_path)
    check_pools(request, catalog, target)
    graph = load_model(model_path, input_shapes)
    timings["load_s"] = time.monotonic() - started
    phase(1)
    report = check_graph(graph, catalog, target_id)
    groups = build_groups(report)
    timings["check_and_group_s"] = time.monotonic() - started - timings["load_s"]
    budget = Budget(request.time_limit_s, started, len(groups.groups), request.deterministic_limit_s)
    phase(2)
    if request.dla_standalone:
        blockers = _standalone_blockers(report, groups)
        if blockers:
            shown = "; ".join(blockers[:5]) + (f"; and {len(blockers) - 5} more" if len(blockers) > 5 else "")
            raise InfeasibleError(f"--dla-standalone: {len(blockers)} node(s) cannot run on DLA: {shown}",
                                  file=graph.path, rule="DLA-STANDALONE-IO")
    model = LatencyModel(groups, catalog, target, profile, request.sram_bytes, io=report.io,
                         standalone=request.dla_standalone, loadable_sram=request.sram_per_loadable)
    if request.with_edits:
        add_edit_options(model, report, catalog, str(model_path))
    # A dual-stream plan's loadables are in use once per stream, so its baselines and hints keep to half.
    limit = loadable_limit(request, int(catalog.rule("DLA-LOADABLES").params["max"]))  # per core in TensorRT 11
    base = baselines(model, limit, request.allowed_precisions)
    hint = _hint(model, base, request, limit)
    phase(3)
    log.debug("%d layer groups; deterministic budget %.2f s, wall deadline in %.2f s", len(groups.groups),
              budget.deterministic_s, budget.wall_left())
    solve_started = time.monotonic()
    result, notes = _solve(model, report, catalog, request, hint, budget)
    log.debug("solver: %s, stopped by %s, %.2f deterministic s", result.outcome.value, result.stop.value,
              result.deterministic_s)
    phase(4)
    deterministic_s = budget.deterministic_s
    timings["solve_s"] = time.monotonic() - solve_started
    breakdown = evaluate(model, result.placements)
    subgraphs = build_subgraphs(groups, result.placements)
    plan = _plan_json(graph_path=model_path, report=report, groups=groups, model=model, request=request,
                      result=result, breakdown=breakdown, subgraphs=subgraphs, base=base, explain=explain,
                      deterministic_s=deterministic_s)
    plan["solver"]["stopped_by"] = budget.stop(result.stop).value
    if budget.wall_fired:
        notes.append(wall_note(request.time_limit_s, budget))
    plan["warnings"] = notes + plan["warnings"]
    timings["total_s"] = time.monotonic() - started
    phase(5)
    run = {
        "schema": "edgeplan.run/v1",
        "tool_version": __version__,
        "timings": timings,
        "solver": {"wall_s": result.wall_s, "variables": result.num_variables,
                   "constraints": result.num_constraints, "connectivity_rounds": result.iterations,
                   "objective_ns": result.objective_ns, "evaluated_ns": breakdown.total_ns,
                   "outcome": result.outcome.value, "stopped_by": result.stop.value,
                   "deterministic_s": result.deterministic_s, "deterministic_budget_s": budget.deterministic_s,
                   "wall_limit_fired": budget.wall_fired},
        "host": {"python": platform.python_version(), "platform": platform.platform(),
                 "cpu_count": os.cpu_count()},
        "groups": len(groups.groups),
        "nodes": len(graph.nodes),
    }
    # Typed from its JSON values, so what the caller reads is exactly what plan.json holds (rounded figures).
    typed = Plan.from_json(json_values(plan))
    return Planned(plan=typed, run=run, report=report, groups=groups, model=model, placements=result.placements,
                   breakdown=breakdown, subgraphs=subgraphs, baselines=base)


def wall_note(time_limit_s: float, budget: Budget) -> str:
    """The warning of a run the wall clock cut: its plan depends on the machine's load."""
    return (f"the wall-clock safety net ({WALL_FACTOR:g} x --time-limit {time_limit_s:g} s and allowance) stopped "
            f"the solver before its deterministic budget ({budget.deterministic_s:g} s): the machine ran far "
            "slower than the limit assumes and this plan may differ between runs; rerun on a less loaded machine "
            "or raise --time-limit for a reproducible one")


def _solve(model: LatencyModel, report: CheckReport, catalog: Catalog, request: PlanRequest,
           hint: tuple[Placement, ...], budget: Budget) -> tuple[SolveResult, list[str]]:
    """The exact plan, or the best found in time, or, for a request the baselines satisfy, the best baseline
    when the exact model is too large or finds nothing in time; the notes say which."""
    groups = len(model.groups.groups)
    baseline = objective_ns(request.objective, evaluate(model, hint))
    bound = lower_bound_ns(model, request, proves=baseline if _unconstrained(request) else None)
    if _unconstrained(request) and baseline <= bound:
        return replace(_baseline_result(model, hint, request.objective, bound), status="OPTIMAL",
                       outcome=Outcome.EXACT, stop=Stop.PROVEN), []
    if groups > MAX_EXACT_GROUPS and _unconstrained(request) and request.objective == "latency" \
            and not request.with_edits:
        return _by_regions(model, report, catalog, request, hint, bound, budget)
    if groups > MAX_EXACT_GROUPS and _unconstrained(request):
        gap = (baseline - bound) / baseline if baseline else 0.0
        return _baseline_result(model, hint, request.objective, bound), [
            f"{groups} layer groups exceed the exact solver's {MAX_EXACT_GROUPS}: the plan is the best baseline, "
            f"within {gap:.1%} of the lower bound (cheapest options, LP relaxation)"]
    try:
        if budget.wall_left() <= 0:  # loading and checking took the whole limit: do not even build the model
            budget.wall_fired = True
            result = replace(_baseline_result(model, hint, request.objective, bound), outcome=Outcome.NOT_FOUND,
                             stop=Stop.WALL_LIMIT)
        else:
            result = PlanModel(model, report, catalog, request).solve(hint, budget, bound, baseline)
    except InfeasibleError as exc:
        detail = ""
        if request.explain_infeasible:
            names = PlanModel(model, report, catalog, request, explain=True).conflict(budget)
            detail = ("; no time left within --time-limit to name the constraints in conflict" if names is None
                      else f"; constraints in conflict: {', '.join(names)}" if names else "")
        raise InfeasibleError(f"{exc.message}{detail}", file=model.graph.path, node=exc.node) from None
    if result.outcome is not Outcome.NOT_FOUND:
        limit = loadable_limit(request, catalog.loadables_at_once(model.target))
        return _launch_proof(model, request, replace(result, bound_ns=max(result.bound_ns,
                                                                         min(bound, result.objective_ns))),
                             limit), []
    if not _unconstrained(request):
        raise InfeasibleError(f"no plan found within --time-limit {request.time_limit_s:g} s; raise the limit "
                              "(the request has constraints the baselines do not honour)", file=model.graph.path)
    fallback = _baseline_result(model, hint, request.objective, bound)
    gap = (fallback.objective_ns - bound) / fallback.objective_ns if fallback.objective_ns else 0.0
    return (replace(fallback, stop=result.stop, deterministic_s=result.deterministic_s),
            [f"no plan found within --time-limit {request.time_limit_s:g} s: the plan is the best baseline for "
             f"{request.objective}, within {gap:.1%} of the lower bound (cheapest options, LP relaxation)"])


def _launch_proof(model: LatencyModel, request: PlanRequest, result: SolveResult, limit: int) -> SolveResult:
    """An unproven throughput plan checked against the launch-raised LP (optimizer.solver._bounds.
    throughput_lp_ns), the region DP that sees border copies (optimizer.solver._cutbound) and the one that keeps
    the two DLA cores apart (optimizer.solver._corebound, given the plan as its upper bound): a real gap, and
    OPTIMAL when the plan meets them. After the search, so the search and the plan stay what they were."""
    if request.objective != "throughput" or result.outcome is not Outcome.BEST_FOUND \
            or len(model.groups.groups) > LP_MAX_GROUPS:
        return result
    raised = min(max(throughput_lp_ns(model, request) or 0, region_bound_ns(model, request, limit) or 0),
                 result.objective_ns)
    if raised < result.objective_ns:
        raised = max(raised, core_bound_ns(model, request, limit, result.objective_ns) or 0)
    if raised <= result.bound_ns:
        return result
    if raised < result.objective_ns:
        return replace(result, bound_ns=raised)
    return replace(result, bound_ns=raised, status="OPTIMAL", outcome=Outcome.EXACT)


def _by_regions(model: LatencyModel, report: CheckReport, catalog: Catalog, request: PlanRequest,
                hint: tuple[Placement, ...], bound: int, budget: Budget) -> tuple[SolveResult, list[str]]:
    """Past the exact model's size, latency by regions between cut groups (optimizer.solver._decompose),
    or the best baseline if it is better; either way with the better of both bounds."""
    limit = loadable_limit(request, int(catalog.rule("DLA-LOADABLES").params["max"]))
    result, parts = decomposed_solve(model, report, catalog, request, gpu_only(model, request.allowed_precisions),
                                     limit, budget, prefer=hint)
    bound = max(bound, result.bound_ns)
    if objective_ns("latency", evaluate(model, hint)) < result.objective_ns:
        result = replace(_baseline_result(model, hint, "latency", bound), stop=result.stop,
                         deterministic_s=result.deterministic_s)
    exact = result.objective_ns <= bound
    result = replace(result, bound_ns=min(bound, result.objective_ns), status="OPTIMAL" if exact else "FEASIBLE",
                     outcome=Outcome.EXACT if exact else result.outcome)
    gap = (result.objective_ns - bound) / result.objective_ns if result.objective_ns else 0.0
    how = "the best baseline" if result.outcome is Outcome.BASELINE else f"solved in {parts} regions between cut groups"
    return result, [] if exact else [
        f"{len(model.groups.groups)} layer groups exceed the exact solver's {MAX_EXACT_GROUPS}: the plan is {how}, "
        f"within {gap:.1%} of the lower bound (cheapest options, LP relaxation by region)"]


def _hint(model: LatencyModel, base: Baselines, request: PlanRequest, limit: int) -> tuple[Placement, ...]:
    """The best baseline for the objective; for the pipelined objectives also TensorRT's loadables spread over
    the DLA cores and the GPU (a balanced pipeline is a far better start than everything on one engine)."""
    def score(b: Breakdown) -> int:
        return objective_ns(request.objective, b)

    candidates: list[tuple[int, int, tuple[Placement, ...]]] = [(score(b), k, p)
                                                                for k, (p, b) in enumerate(base.values())]
    if request.objective != "latency" and "trt_default" in base:
        cores = 1 if request.objective == "dual-stream" else \
            sum(d.startswith("dla") for d in model.target.devices)
        spread = balanced_hint(model, base["trt_default"][0], request.allowed_precisions, score, cores)
        candidates.append((score(evaluate(model, spread)), len(candidates), spread))
        cut = interval_hint(model, request.allowed_precisions, score, cores, limit) \
            if request.objective == "throughput" else None
        if cut is not None:
            candidates.append((score(evaluate(model, cut)), len(candidates), cut))
        if request.objective == "throughput" and len(model.groups.groups) <= INTERVAL_MAX_GROUPS:
            best = min(candidates)[2]
            return border_descent(model, best, request.allowed_precisions, score, cores, limit)
    return min(candidates)[2]


def _unconstrained(request: PlanRequest) -> bool:
    """No request the baselines could violate (they ignore pins, budgets and caps)."""
    return not (request.pins or request.precision_pins or request.int8_budget is not None
                or request.latency_cap_ms is not None or request.dla_standalone or request.max_loadables)


def objective_ns(objective: str, breakdown: Breakdown) -> int:
    """The objective CP-SAT minimises, measured on an evaluated plan: what plan.json and the terminal print."""
    return objective_cycle_ns(objective, breakdown)[0]


def _baseline_result(model: LatencyModel, hint: tuple[Placement, ...], objective: str, bound: int) -> SolveResult:
    """The best baseline handed over as the plan, FEASIBLE, with the cheapest-option bound as its proof."""
    breakdown = evaluate(model, hint)
    score = objective_ns(objective, breakdown)
    total = breakdown.total_ns
    return SolveResult(placements=hint, status="FEASIBLE", objective_ns=score, bound_ns=min(bound, score),
                       total_ns=total,
                       wall_s=0.0, iterations=0, num_variables=0, num_constraints=0,
                       choices=tuple(() for _ in hint), outcome=Outcome.BASELINE, stop=Stop.NOT_RUN)


def partition_warning(transfer_ns: int, total_ns: int) -> str | None:
    """Seed 004's poor-partition heuristic, at 20% or more, compared in integers (no rounding at the edge)."""
    if total_ns <= 0 or transfer_ns * 100 < TRANSFER_WARNING_PERCENT * total_ns:
        return None
    return (f"transfers take {transfer_ns / total_ns:.0%} of the latency ({TRANSFER_WARNING_PERCENT}% or more): "
            "a poor partition per the scheduling guide (seed 004); consider pinning or model edits")


def _ms(ns: float) -> float:
    return round(ns / 1e6, 6)


def objective_cycle_ns(objective: str, breakdown: Breakdown) -> tuple[int, int]:
    """(ns per cycle, frames per cycle) as the objective counts them: the whole frame in sequence for latency,
    the busiest engine for throughput, two streams on the two DLA cores sharing the GPU for dual-stream."""
    busy = breakdown.busy_ns
    if objective == "throughput":
        return (max(busy.values()) if busy else breakdown.total_ns), 1
    if objective == "dual-stream":
        return max(busy.get("dla0", 0), 2 * busy.get("gpu", 0)), 2
    return breakdown.total_ns, 1


def _predicted(request: PlanRequest, breakdown: Breakdown) -> dict[str, float]:
    busy = breakdown.busy_ns
    cycle, frames = objective_cycle_ns(request.objective, breakdown)
    return {"latency_ms": _ms(breakdown.total_ns),
            "throughput_fps": round(frames * 1e9 / cycle, 3) if cycle else 0.0,
            "busiest_engine_ms": _ms(max(busy.values()) if busy else 0)}


def _band(model: LatencyModel, placements: tuple[Placement, ...], breakdown: Breakdown) -> dict[str, Any] | None:
    """The plan's likely latency range: the LOSO band of the device and precision that take most of its time."""
    time: dict[tuple[str, str], int] = {}
    for p, ns in zip(placements, breakdown.group_ns):
        key = (p.option.device, p.option.precision)
        time[key] = time.get(key, 0) + ns
    if not time:
        return None
    device, precision = max(sorted(time), key=lambda k: time[k])
    band = model.profile.band(model.target.calibration, device, precision)
    return band_json(band, breakdown.total_ns / 1e6)


def _plan_json(*, graph_path: str, report: CheckReport, groups: GroupGraph, model: LatencyModel,
               request: PlanRequest, result: SolveResult, breakdown: Breakdown, subgraphs: tuple[Subgraph, ...],
               base: Baselines, explain: bool, deterministic_s: float = 0.0) -> dict[str, Any]:
    graph = report.graph
    target = report.target
    placements = result.placements
    objective = objective_ns(request.objective, breakdown)
    bound = min(result.bound_ns, objective)
    group_subgraph = {g: s.id for s in subgraphs for g in s.groups}
    layers = []
    for node in graph.nodes:
        g = groups.node_group[node.name]
        if g < 0:
            layers.append({"node": node.name, "op_type": node.op_type, "device": target.fallback,
                           "precision": "fp32", "sparsity": "dense", "cores": None, "latency_ms": 0.0,
                           "group": None, "subgraph": None, "role": "constant"})
            continue
        p = placements[g]
        group = groups.groups[g]
        role = "anchor" if node.name == group.anchor else ("constant" if node.name in group.attached else "fused")
        layers.append({
            "node": node.name, "op_type": node.op_type, "device": p.device, "precision": p.option.precision,
            "sparsity": p.option.sparsity if node.name == group.anchor else "dense",
            "cores": p.option.cores if p.option.device == "npu" else None,
            "latency_ms": _ms(breakdown.group_ns[g]) if role == "anchor" else 0.0,
            "group": g, "subgraph": group_subgraph[g], "role": role,
        })
        if p.option.edit:
            layers[-1]["edit"] = p.option.edit
    plan: dict[str, Any] = {
        "schema": PLAN_SCHEMA,
        "tool_version": __version__,
        "target": target.id,
        "model": model_block(graph) | {"path": graph_path},
        "objective": request.objective,
        "solver": {
            "status": result.status,
            "outcome": result.outcome.value,
            "objective_ms": _ms(objective),
            "bound_ms": _ms(bound),
            "gap": round((objective - bound) / objective, 6) if objective else 0.0,
            "seed": request.seed,
            "workers": request.workers,
            "deterministic_budget_s": deterministic_s,
            "groups": len(groups.groups),
        },
        "predicted": _predicted(request, breakdown),
        "baselines": {name: {"latency_ms": _ms(b.total_ns), "throughput_fps":
                             round(1e9 / b.total_ns, 3) if b.total_ns else 0.0}
                      for name, (_, b) in base.items()},
        "request": _request_json(request),
        **({"tensorrt_rules": report.tensorrt_rules} if report.tensorrt_rules else {}),
        "breakdown": _breakdown_json(breakdown),
        "layers": layers,
        "subgraphs": [_subgraph_json(s, graph, groups, model, placements, breakdown) for s in subgraphs],
        "warnings": [],
        "transfers": [{"tensor": t.tensor, "from": t.src_device, "to": t.dst_device,
                       "bytes": (graph.tensors[t.tensor].num_elements or 0) * BYTES_PER_ELEMENT[t.precision],
                       "precision": t.precision, "format": t.fmt, "latency_ms": _ms(t.ns)}
                      for t in breakdown.transfers],
    }
    plan["predicted"]["latency_band_ms"] = _band(model, placements, breakdown)
    plan["predicted"] |= _energy_fields(model, request, breakdown)
    for name, entry in plan["baselines"].items():
        entry["speedup"] = round(entry["latency_ms"] / plan["predicted"]["latency_ms"], 4) \
            if plan["predicted"]["latency_ms"] else None
        entry["subgraphs"] = len({p.engine for p in base[name][0]})
        if request.objective != "latency":  # the baseline run as this objective runs the plan, pipelined
            cycle, frames = objective_cycle_ns(request.objective, base[name][1])
            entry["pipelined_fps"] = round(frames * 1e9 / cycle, 3) if cycle else 0.0
            entry["throughput_speedup"] = round(plan["predicted"]["throughput_fps"] / entry["pipelined_fps"], 4) \
                if entry["pipelined_fps"] else None
    plan["unknown_sizes"] = unknown_sizes(graph)
    plan["opset_conversion"] = opset_conversion(graph)
    plan["warnings"].extend(conversion_warnings(graph) + size_warnings(plan["unknown_sizes"])
                            + refusal_warnings(report))
    plan["edits"] = sorted({p.option.edit for p in placements if p.option.edit})
    if plan["edits"]:
        plan["warnings"].append("the plan assumes model edits: apply them with `edgeplan edit MODEL --apply "
                                + ",".join(plan["edits"]) + "` and re-plan the edited model before export")
    warning = partition_warning(breakdown.transfer_ns, breakdown.total_ns)
    if warning:
        plan["warnings"].append(warning)
    if any(p.option.sparsity != "dense" for p in placements):
        plan["warnings"].append("the plan uses RKNN sparse weights: train them with autosparsity "
                                "(RKNN-SPARSE-MODES) and convert with sparse_infer=True")
    if explain:
        plan["costs"] = _costs_json(groups, model, result)
    if request.objective == "throughput":  # whole copies with a frame split, against this pipelined plan
        from optimizer.plan._replicate import contended_cycle_ns, engine_use, replication, replication_json

        limit = loadable_limit(request, int(model.catalog.rule("DLA-LOADABLES").params["max"]))
        rep = replication_json(replication(model, limit, request.allowed_precisions),
                               objective_cycle_ns(request.objective, breakdown)[0],
                               contended_cycle_ns(model, [(1.0, engine_use(model, placements))]))
        if rep is not None:
            plan["replication"] = rep
    return plan


def _energy_fields(model: LatencyModel, request: PlanRequest, breakdown: Breakdown) -> dict[str, Any]:
    """Energy per frame (mJ; None without power figures) and the GPU's busy share of the objective's period
    (the frame for latency, the cycle for the pipelined objectives): optimizer/latency/_energy.py."""
    from optimizer.latency._energy import energy_mj, gpu_share, target_power

    cycle, frames = objective_cycle_ns(request.objective, breakdown)
    energy = energy_mj(target_power(model.target), breakdown.busy_ns, cycle)
    fields = {"energy_mj": round(energy / frames, 6) if energy is not None else None,
              "gpu_busy_share": gpu_share(breakdown.busy_ns, cycle) if "gpu" in model.target.devices else None}
    return {k: v for k, v in fields.items() if v is not None}  # absent where the target has no such figure


def _request_json(request: PlanRequest) -> dict[str, Any]:
    return {"allowed_precisions": sorted(request.allowed_precisions), "pins": dict(sorted(request.pins.items())),
            "precision_pins": dict(sorted(request.precision_pins.items())),
            "int8_budget": request.int8_budget, "latency_cap_ms": request.latency_cap_ms,
            "dla_standalone": request.dla_standalone, "max_loadables": request.max_loadables,
            "sram_bytes": request.sram_bytes, "sram_per_loadable": list(request.sram_per_loadable),
            "sparsity": request.sparsity, "with_edits": request.with_edits}


def _breakdown_json(b: Breakdown) -> dict[str, Any]:
    return {"layers_ms": _ms(sum(b.group_ns)), "transfers_ms": _ms(b.transfer_ns),
            "reformats_ms": _ms(sum(c[2] for c in b.precision_changes)), "launches_ms": _ms(b.launch_ns),
            "loadables": len(b.loadables), "busy_ms": {k: _ms(v) for k, v in b.busy_ns.items()}}


def _subgraph_json(s: Subgraph, graph: Graph, groups: GroupGraph, model: LatencyModel,
                   placements: tuple[Placement, ...], breakdown: Breakdown) -> dict[str, Any]:
    names = [n for g in s.groups for n in (*groups.groups[g].members, *groups.groups[g].attached)]
    names.sort(key=lambda n: graph.node(n).index)
    inside = set(names)
    inputs, outputs = [], []
    for name in names:
        node = graph.node(name)
        for t in graph.runtime_inputs(node):
            producer = graph.producer(t)
            if (producer is None or producer.name not in inside) and t not in inputs:
                inputs.append(t)
        for t in node.outputs:
            if t and (t in graph.outputs or any(c.name not in inside for c in graph.consumers(t))) \
                    and t not in outputs:
                outputs.append(t)
    precisions = sorted({placements[g].option.precision for g in s.groups})
    entry: dict[str, Any] = {"id": s.id, "device": s.device, "nodes": names, "inputs": inputs, "outputs": outputs,
                             "precision": precisions[0] if len(precisions) == 1 else "mixed",
                             "precisions": precisions}
    if s.device.startswith("dla"):
        option = placements[s.groups[0]].option
        formats = {}
        engine = placements[s.groups[0]].engine
        for t in inputs:
            if t in graph.inputs and graph.producer(t) is None:
                formats[t] = model.input_format(t, option)[0]
            else:
                formats[t] = next((x.fmt for x in breakdown.transfers if x.tensor == t and x.dst_engine == engine),
                                  "dla_linear")
        for t in outputs:
            if t in graph.outputs:
                formats[t] = model.output_format(t, option)[0]
            else:
                formats[t] = next((x.fmt for x in breakdown.transfers if x.tensor == t), "dla_linear")
        entry["io_formats"] = formats
        pools = model.profile.memory_pools
        local_need, global_need = _dram_needs(graph, names, inside, outputs, option.precision)
        entry["memory_needs"] = {"dla_local_dram_bytes": local_need, "dla_global_dram_bytes": global_need}
        entry["memory_pools"] = {
            "dla_sram_bytes": model.sram_of(s.loadable),
            "dla_local_dram_bytes": max(int(pools.get("dla_local_dram_bytes", 1 << 30)), _pow2_at_least(local_need)),
            "dla_global_dram_bytes": max(int(pools.get("dla_global_dram_bytes", 1 << 29)),
                                         _pow2_at_least(global_need))}
        entry["loadable"] = s.loadable
    if s.device == "npu":
        entry["cores"] = max(placements[g].option.cores for g in s.groups)
    return entry


def _dram_needs(graph: Graph, names: list[str], inside: set[str], outputs: list[str], precision: str
                ) -> tuple[int, int]:
    """Upper bounds of what a loadable keeps in DLA DRAM: every tensor it produces and does not hand out
    (local pool: intermediate activations) and its weights (global pool). TensorRT's default pools are far
    larger for most networks; a loadable that needs more gets a pool that fits (DLA-POOL-POW2)."""
    bpe = BYTES_PER_ELEMENT[precision]
    local = sum((graph.tensors[t].num_elements or 0) * bpe for n in names for t in graph.node(n).outputs
                if t and t in graph.tensors and t not in outputs and not graph.node(n).folded)
    weights = sum(graph.weight_bytes(graph.node(n), precision) for n in names if n in inside)
    return int(local), int(weights)


def _pow2_at_least(value: int, minimum: int = 4096) -> int:
    size = minimum
    while size < value:
        size *= 2
    return size


def _costs_json(groups: GroupGraph, model: LatencyModel, result: SolveResult) -> dict[str, Any]:
    layers = []
    for g, group in enumerate(groups.groups):
        layers.append({"group": g, "anchor": group.anchor, "members": list(group.members),
                       "options": [{"device": c.option.device, "core": c.core, "precision": c.option.precision,
                                    "cores": c.option.cores, "sparsity": c.option.sparsity,
                                    "latency_ms": _ms(c.cost_ns)} for c in result.choices[g]]})
    tensors = []
    kinds = sorted({d for g in groups.groups for d, _ in g.support})
    for tensor, src, consumers in tensor_routes(model):
        if src < 0:
            continue
        costs = {}
        for a in kinds:
            for b in kinds:
                if a == b and a != "dla":
                    continue
                for p in PRECISIONS:
                    if (a, p) in groups.groups[src].support:
                        costs[f"{a}->{b}/{p}"] = _ms(model.transfer(tensor, a, b, p)[1])
        tensors.append({"tensor": tensor, "from_group": src, "to_groups": list(consumers),
                        "transfer_ms": costs, "reformat_ms": _ms(model.precision_change_ns(tensor))})
    return {"layers": layers, "tensors": tensors, "loadable_launch_ms": _ms(model.launch_ns())}
