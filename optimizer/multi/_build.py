"""optimize_multi(): several models -> one merged graph -> one CP-SAT model -> plan.json with a `models` section."""

from __future__ import annotations

import itertools
import json
import logging
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from optimizer.catalog import Catalog, load_catalog
from optimizer.check import CheckReport, check_graph, model_block
from optimizer.errors import BadInputError, InfeasibleError
from optimizer.fileio import dumps_json
from optimizer.fusion import build_groups
from optimizer.ir import Graph, load_model
from optimizer.latency import LatencyModel, Option, Placement, group_options, load_profile
from optimizer.latency._contention import SOURCE as CONTENTION_SOURCE
from optimizer.latency._energy import Power, target_power
from optimizer.multi._evaluate import MultiBreakdown, group_bytes, meets, multi_evaluate
from optimizer.multi._merge import Part, merge_models, part_of
from optimizer.plan._baselines import ALL, assign_loadables, gpu_only, trt_default
from optimizer.plan._build import Planned, _ms, _plan_json, check_pools
from optimizer.plan._subgraphs import build_subgraphs
from optimizer.plan._types import Plan
from optimizer.solver import Budget, Outcome, PlanRequest, SolveResult, check_target, loadable_limit
from optimizer.solver._multi import MultiPlanModel, MultiRequest

log = logging.getLogger(__name__)
MULTI_SCHEMA = "edgeplan.multi/v1"
MERGED_NAME = "models.onnx"
EXACT_CONTENTION_GROUPS = 40  # past this many layer groups the indicator model of every PCCS step is too slow here
FIXED_POINT_ROUNDS = 3
UNITS = {"makespan": "ms", "throughput": "ms", "weighted": "weighted ms", "energy": "mJ"}


@dataclass(frozen=True)
class MultiPlanned:
    """A multi-model plan before anything is written: the single-plan view of the merged graph, plus the
    merged model's bytes (written as models.onnx beside plan.json, what export cuts)."""

    planned: Planned
    merged: bytes
    parts: tuple[Part, ...]
    evaluation: MultiBreakdown

    @property
    def plan(self) -> dict[str, Any]:
        """plan.json as JSON values (what is written)."""
        return self.planned.plan.to_json()

    def files(self) -> dict[str, str | bytes]:
        from optimizer.multi._summary import html_section, markdown_section
        from optimizer.plan._report import plan_files

        out: dict[str, str | bytes] = dict(plan_files(self.planned))
        plan = self.plan
        out["report.md"] = str(out["report.md"]) + markdown_section(plan)
        page = str(out["report.html"])
        at = page.rfind("</body>")
        out["report.html"] = page[:at] + html_section(plan) + page[at:] if at >= 0 else page + html_section(plan)
        if len(self.parts) > 1:
            out[MERGED_NAME] = self.merged
        return out


def _baselines(lm: LatencyModel, limit: int, allowed: frozenset[str], group_part: Sequence[int],
               parts: int) -> dict[str, tuple[Placement, ...]]:
    """gpu_only; trt_default (TensorRT's default for every model: DLA core 0 with GPU fallback); and
    one_per_engine_*: each model whole on the GPU or one DLA core (TensorRT's DLA default on that core),
    every assignment of models to engines (the best one is named `one_per_engine`)."""
    gpu = gpu_only(lm, allowed)
    trt = trt_default(lm, limit, allowed)
    out: dict[str, tuple[Placement, ...]] = {"gpu_only": gpu, "trt_default": trt}
    engines = ["gpu"] + [f"dla{c}" for c in range(lm.target.cores)]
    if not lm.backend.cores_are_engines or not lm.target.cores:
        return out
    for assignment in itertools.product(engines, repeat=parts):
        placements = []
        for g in range(len(gpu)):
            engine = assignment[group_part[g]]
            if engine == "gpu" or trt[g].option.device != "dla":
                placements.append(gpu[g] if engine == "gpu" or trt[g].option.device != "dla" else trt[g])
            else:
                placements.append(Placement(trt[g].option, core=int(engine[3:]), loadable=0))
        out["one_per_engine[" + ",".join(assignment) + "]"] = assign_loadables(lm, tuple(placements), limit,
                                                                                allowed)
    return out


def optimize_multi(model_paths: Sequence[str], target_id: str, request: PlanRequest, multi: MultiRequest, *,
                   input_shapes: Mapping[str, tuple[int, ...]] | None = None, profile_path: str | None = None,
                   catalog: Catalog | None = None, started: float | None = None,
                   merged_path: str | None = None) -> MultiPlanned:
    """Plans several models (or one, under the energy objective or a GPU budget) on one target in one CP-SAT
    model. `merged_path` is where the caller will write models.onnx (recorded as the plan's model path)."""
    started = time.monotonic() if started is None else started
    if catalog is None or catalog.tensorrt != request.tensorrt:  # the DLA rule set of the TensorRT major asked for
        catalog = load_catalog(tensorrt=request.tensorrt)
    target = catalog.target(target_id)
    check_target(request, target)
    if request.with_edits or request.dla_standalone or request.latency_cap_ms or request.precision_pins:
        raise BadInputError("several models (or --objective energy/makespan/weighted, --gpu-budget) do not take "
                            "--with-edits, --precision, --dla-standalone or a single --latency-cap MS here; "
                            "use --latency-cap NAME=MS per model or --makespan-cap MS")
    check_pools(request, catalog, target)
    profile = load_profile(target.family, profile_path)
    merged, parts = merge_models(model_paths)
    names = tuple(p.name or Path(p.path).stem for p in parts)
    multi.check_names(names)
    with tempfile.TemporaryDirectory(prefix="edgeplan-multi-") as tmp:
        path = Path(tmp) / MERGED_NAME
        path.write_bytes(merged)
        graph = load_model(path if len(parts) > 1 else Path(parts[0].path), input_shapes)
    report = check_graph(graph, catalog, target_id)
    groups = build_groups(report)
    group_part = [part_of(g.anchor, parts) for g in groups.groups]
    budget = Budget(request.time_limit_s, started, len(groups.groups), request.deterministic_limit_s)
    lm = LatencyModel(groups, catalog, target, profile, request.sram_bytes, io=report.io,
                      loadable_sram=request.sram_per_loadable)
    power = target_power(target)
    limit = loadable_limit(request, int(catalog.rule("DLA-LOADABLES").params["max"]))
    options = {g: group_options(lm, g, ALL) for g in range(len(groups.groups))}
    bytes_of = group_bytes(lm, options)

    def score(placements: tuple[Placement, ...], default_formats: bool = False) -> MultiBreakdown:
        return multi_evaluate(lm, placements, group_part, names, multi, power, bytes_of, default_formats)

    base = _baselines(lm, limit, request.allowed_precisions, group_part, len(parts))
    scored = {name: score(p, name == "trt_default") for name, p in base.items()}
    per_engine = [n for n in scored if n.startswith("one_per_engine[")]
    if per_engine:
        best = min(per_engine, key=lambda n: (scored[n].objective, n))
        base["one_per_engine"], scored["one_per_engine"] = base[best], scored[best]
    usable = sorted((s.objective, n) for n, s in scored.items()
                    if meets(s, names, multi) and honours_pins(lm, base[n], request.pins))
    hint = base[usable[0][1]] if usable else None
    hint_ns = usable[0][0] if usable else 0
    hint_name, start_name = (f"{usable[0][1]} baseline", f"best baseline ({usable[0][1]})") if usable else ("", "")
    if hint is not None and _searched_in_rounds(lm, multi, len(names)):
        seeded, seeded_ns = None, hint_ns  # from gpu_only and every one_per_engine assignment, the best
        for _ns, name in usable:
            if not name.startswith("one_per_engine[") and name != "gpu_only":
                continue
            candidate = _offload_seed(lm, base[name], base["trt_default"], limit, request.allowed_precisions,
                                      lambda p: score(p) if honours_pins(lm, p, request.pins) else None, names,
                                      multi)
            if candidate is not None and score(candidate).objective < seeded_ns:
                seeded, seeded_ns = candidate, score(candidate).objective
        if seeded is not None:
            hint, hint_ns = seeded, score(seeded).objective
            hint_name = start_name = "best baseline with DLA runs offloaded"
    notes: list[str] = []
    try:
        result, exact = _solve(lm, report, catalog, request, multi, group_part, names, power, bytes_of, hint,
                               budget, score)
    except InfeasibleError:
        raise InfeasibleError("no plan meets every constraint (" + _asked(multi) + ")", file=str(model_paths[0])
                              ) from None
    if not exact:
        notes.append("contention was planned in fixed-point rounds (more than "
                     f"{EXACT_CONTENTION_GROUPS} layer groups): each solve holds the PCCS steps the previous plan "
                     "reached; the bound is the contention-free optimum's")
    if result.outcome is Outcome.NOT_FOUND:
        if hint is None:
            raise InfeasibleError(f"no plan found within --time-limit {request.time_limit_s:g} s and no baseline "
                                  f"meets {_asked(multi)}; raise the limit", file=str(model_paths[0]))
        result = SolveResult(placements=hint, status="FEASIBLE", objective_ns=hint_ns,
                             bound_ns=min(result.bound_ns, hint_ns), total_ns=-1,
                             wall_s=0.0, iterations=0, num_variables=0, num_constraints=0,
                             outcome=Outcome.BASELINE, stop=result.stop)
        notes.append(f"no plan found within --time-limit {request.time_limit_s:g} s: the plan is the "
                     f"{start_name}")
    evaluation = score(result.placements)
    if result.outcome is not Outcome.EXACT and hint is not None and hint_ns < evaluation.objective:
        # CP-SAT did not complete the hint within the budget: never hand back a plan worse than the hint.
        result = replace(result, placements=hint, outcome=Outcome.BEST_FOUND)
        evaluation = score(hint)
        notes.append(f"the solver found nothing better than the {hint_name} within the budget")
    if not exact and result.outcome is not Outcome.EXACT:
        polished = _offload_seed(lm, result.placements, base["trt_default"], limit, request.allowed_precisions,
                                 lambda p: score(p) if honours_pins(lm, p, request.pins) else None, names, multi)
        if polished is not None:  # the same moves from the solver's plan, scored exactly with contention
            evaluation = score(polished)
            result = replace(result, placements=polished, objective_ns=evaluation.objective)
    if exact and result.outcome is Outcome.EXACT and evaluation.objective != result.objective_ns:
        raise AssertionError(f"multi-model objective mismatch: CP-SAT {result.objective_ns}, "
                             f"evaluated {evaluation.objective}")
    breakdown = evaluation.breakdown
    subgraphs = build_subgraphs(groups, result.placements)
    base_pairs = {n: (p, scored[n].breakdown) for n, p in base.items() if not n.startswith("one_per_engine[")}
    plan = _plan_json(graph_path=str(merged_path or graph.path), report=report, groups=groups, model=lm,
                      request=request, result=replace(result, bound_ns=min(result.bound_ns, result.objective_ns)),
                      base=base_pairs, breakdown=breakdown, subgraphs=subgraphs, explain=False,
                      deterministic_s=budget.deterministic_s)
    if len(parts) == 1:
        plan["model"]["path"] = parts[0].path
    _multi_fields(plan, multi, result, evaluation, scored, parts, names, power, graph, base.get("one_per_engine", ()))
    plan["warnings"] = notes + plan["warnings"]
    run = {"schema": "edgeplan.run/v1", "timings": {"total_s": time.monotonic() - started},
           "solver": {"wall_s": result.wall_s, "variables": result.num_variables,
                      "constraints": result.num_constraints, "outcome": result.outcome.value,
                      "stopped_by": result.stop.value, "deterministic_s": result.deterministic_s,
                      "deterministic_budget_s": budget.deterministic_s, "wall_limit_fired": budget.wall_fired},
           "groups": len(groups.groups), "nodes": len(graph.nodes)}
    typed = Plan.from_json(json.loads(dumps_json(plan)))
    planned = Planned(plan=typed, run=run, report=report, groups=groups, model=lm, placements=result.placements,
                      breakdown=breakdown, subgraphs=subgraphs, baselines=base_pairs)
    return MultiPlanned(planned=planned, merged=merged, parts=parts, evaluation=evaluation)


def honours_pins(lm: LatencyModel, placements: tuple[Placement, ...], pins: Mapping[str, str]) -> bool:
    """Whether an assignment keeps every --pin (a baseline ignores them: it may only stand in for the plan
    when it happens to keep them)."""
    for node, device in pins.items():
        g = lm.groups.node_group.get(node, -1)
        if g < 0:
            continue  # the solver names a bad pin
        placed = placements[g]
        if placed.device != device and not (device == "dla" and placed.option.device == "dla"):
            return False
    return True


def _phase(budget: Budget, share: float) -> Budget:
    phase = Budget(budget.time_limit_s, deterministic_s=max(budget.deterministic_left() * share, 1e-3))
    phase.deadline = budget.deadline
    return phase


def _charge(budget: Budget, phase: Budget) -> None:
    budget.used_s += phase.used_s
    budget.wall_fired = budget.wall_fired or phase.wall_fired


def _solve(lm: LatencyModel, report: CheckReport, catalog: Catalog, request: PlanRequest, multi: MultiRequest,
           group_part: Sequence[int], names: Sequence[str], power: Power | None,
           bytes_of: Sequence[Mapping[Option, int]], hint: tuple[Placement, ...] | None, budget: Budget,
           score: Callable[[tuple[Placement, ...]], MultiBreakdown]) -> tuple[SolveResult, bool]:
    """Exact contention steps (indicator constraints) up to EXACT_CONTENTION_GROUPS layer groups; beyond, a
    contention-free solve, then rounds with each engine's PCCS step fixed at what the last plan reached,
    keeping the best plan as the exact evaluator scores it. (bool: the objective is the exact model's.)"""
    def build(**kw: Any) -> MultiPlanModel:
        return MultiPlanModel(lm, report, catalog, request, multi, group_part, names, power, bytes_of, **kw)

    if not _searched_in_rounds(lm, multi, len(names)):
        return build().solve(hint, budget), True
    phase = _phase(budget, 0.4)
    best = build(contention=False).solve(hint, phase)
    _charge(budget, phase)
    cheapest = _cheapest_bound(lm, multi, group_part, len(names))
    if best.outcome is Outcome.NOT_FOUND:
        if hint is None:
            return replace(best, bound_ns=cheapest), False
        # Nothing found without contention in its share: the rounds start from the hint instead.
        best = replace(best, placements=hint, status="FEASIBLE", outcome=Outcome.BASELINE, bound_ns=0,
                       objective_ns=score(hint).objective)
    free_bound = max(best.bound_ns, cheapest)
    best_score = score(best.placements)
    tried: set[tuple[tuple[str, int], ...]] = set()
    for round_ in range(FIXED_POINT_ROUNDS):
        factors = dict(score(best.placements).milli)
        key = tuple(sorted(factors.items()))
        if key in tried or budget.exhausted():
            break
        tried.add(key)
        phase = _phase(budget, 0.6 if round_ + 1 < FIXED_POINT_ROUNDS else 1.0)  # later rounds are rarer
        candidate = build(factors=factors).solve(best.placements, phase)
        _charge(budget, phase)
        if candidate.outcome is Outcome.NOT_FOUND:
            break
        candidate_score = score(candidate.placements)
        if candidate_score.objective < best_score.objective or (
                candidate_score.objective == best_score.objective and candidate.outcome is Outcome.EXACT):
            best, best_score = candidate, candidate_score
    bound = min(free_bound, best_score.objective)
    proven = bound == best_score.objective
    return replace(best, objective_ns=best_score.objective, bound_ns=bound, status="OPTIMAL" if proven else "FEASIBLE",
                   outcome=Outcome.EXACT if proven else
                   (Outcome.BASELINE if best.outcome is Outcome.BASELINE else Outcome.BEST_FOUND)), False


def _searched_in_rounds(lm: LatencyModel, multi: MultiRequest, parts: int) -> bool:
    """Whether _solve plans contention in fixed-point rounds (past the exact size) rather than exactly."""
    return (multi.concurrent(parts) and len(lm.groups.groups) > EXACT_CONTENTION_GROUPS
            and lm.backend.cores_are_engines)


OFFLOAD_RUNS = tuple(range(1, 9))  # lengths of the consecutive DLA-capable group runs the seed tries to move
OFFLOAD_SWEEPS = 8
OFFLOAD_EVALUATIONS = 600  # per start: about 3 s of the exact evaluator on 200-group pairs


def _offload_seed(lm: LatencyModel, start: tuple[Placement, ...], trt: tuple[Placement, ...], limit: int,
                  allowed: frozenset[str], score: Callable[[tuple[Placement, ...]], MultiBreakdown | None],
                  names: Sequence[str], multi: MultiRequest) -> tuple[Placement, ...] | None:
    """A better starting point than the best baseline for the fixed-point rounds (and a polish of their plan),
    or None: sweeps that each take the best of all moves of a run of 1-8 consecutive DLA-capable groups
    (TensorRT's DLA option for each) from the GPU onto a DLA core, scored by the exact multi-model evaluator
    with contention. A multi-model frame gains from DLA slices of one network while the GPU runs the other, but
    from an all-GPU hint CP-SAT must flip a run's groups, a loadable and its transfers at once to see the gain,
    which its search within the budget may miss (VGG-19 + ResNet-152 on Xavier, main acd643e: the plan was
    gpu_only's 10.324 ms; from this seed 8.662 ms). At most OFFLOAD_EVALUATIONS scores per start, so a start
    with hundreds of DLA-capable groups costs a few seconds. Deterministic: a fixed move order, no clock."""
    first = score(start)
    if first is None:
        return None
    current, best, evaluations = start, first.objective, 0
    capable = [g for g, p in enumerate(trt) if p.option.device == "dla"]
    for _sweep in range(OFFLOAD_SWEEPS):
        moved, base_now = False, current
        for g in capable:
            for core in range(lm.target.cores):
                for length in OFFLOAD_RUNS:
                    run = range(g, g + length)
                    if run[-1] >= len(trt) or any(trt[k].option.device != "dla" or base_now[k].option.device == "dla"
                                                  for k in run):
                        break
                    trial = list(base_now)
                    for k in run:
                        trial[k] = Placement(trt[k].option, core=core, loadable=0)
                    if evaluations >= OFFLOAD_EVALUATIONS:
                        return current if best < first.objective else None
                    evaluations += 1
                    placed = assign_loadables(lm, tuple(trial), limit, allowed)
                    scored = score(placed)
                    if scored is not None and scored.objective < best and meets(scored, names, multi):
                        current, best, moved = placed, scored.objective, True
        if not moved:
            break
    return current if best < first.objective else None


def _cheapest_bound(lm: LatencyModel, multi: MultiRequest, group_part: Sequence[int], parts: int) -> int:
    """Every group at its cheapest option and nothing else (contention, transfers, launches only add): for
    makespan the longest model and the work shared evenly over the engines; for throughput the latter and the
    costliest group. 0 for the other objectives."""
    if multi.objective not in ("makespan", "throughput") or (multi.objective == "throughput" and multi.rates):
        return 0
    from optimizer.solver._bounds import _option_ns

    cheapest = [min(_option_ns(lm, i, o) for o in group_options(lm, i, ALL)) for i in range(len(lm.groups.groups))]
    engines = 1 + lm.target.cores if lm.backend.cores_are_engines else len(lm.target.devices)
    shared = -(-sum(cheapest) // max(engines, 1))
    if multi.objective == "throughput":
        return max(shared, max(cheapest, default=0))
    longest = max(sum(c for c, k in zip(cheapest, group_part) if k == part) + lm.inference_ns()
                  for part in range(parts))
    return max(shared, longest)


def _asked(multi: MultiRequest) -> str:
    asked = [f"--objective {multi.objective}"]
    asked += [f"--rate {k}={v:g}" for k, v in sorted(multi.rates.items())]
    asked += [f"--latency-cap {k}={v:g}" for k, v in sorted(multi.latency_caps.items())]
    if multi.cap_ms is not None:
        asked.append(f"--makespan-cap {multi.cap_ms:g}")
    if multi.gpu_budget is not None:
        asked.append(f"--gpu-budget {multi.gpu_budget:g}")
    return ", ".join(asked)


def _value(objective: str, value: int) -> float:
    if objective == "energy":
        return round(value / 1e9, 6)  # pJ -> mJ
    if objective == "weighted":
        return round(value / 1e9, 6)  # weight x 1000 x ns -> weighted ms
    return _ms(value)


def _multi_fields(plan: dict[str, Any], multi: MultiRequest, result: SolveResult, ev: MultiBreakdown,
                  scored: Mapping[str, MultiBreakdown], parts: Sequence[Part], names: Sequence[str],
                  power: Power | None, graph: Graph, base_placements: tuple[Placement, ...] = ()) -> None:
    rated = multi.objective == "throughput" and bool(multi.rates)
    unit = "utilisation" if rated else UNITS[multi.objective]

    def value(v: int) -> float:
        return round(v / 1e12, 6) if rated else _value(multi.objective, v)

    objective = value(ev.objective)
    bound = min(value(result.bound_ns), objective)
    plan["objective"] = multi.objective
    plan["solver"].update({"objective_ms": objective, "bound_ms": objective if result.status == "OPTIMAL" else bound,
                           "objective_unit": unit,
                           "gap": round((objective - bound) / objective, 6) if objective and
                           result.status != "OPTIMAL" else 0.0})
    engines = sorted(ev.load_ns)
    plan["predicted"].update({
        "latency_ms": _ms(ev.period_ns), "throughput_fps": round(1e9 / ev.period_ns, 3) if ev.period_ns else 0.0,
        "busiest_engine_ms": _ms(max(ev.load_ns.values(), default=0)),
        "energy_mj": round(ev.energy_pj / 1e9, 6) if ev.energy_pj is not None else None,
        "gpu_busy_share": round(ev.load_ns.get("gpu", 0) / ev.period_ns, 6) if ev.period_ns else None})
    plan["predicted"]["latency_band_ms"] = None
    plan["predicted"] = {k: v for k, v in plan["predicted"].items() if v is not None or k == "latency_band_ms"}
    models = []
    for k, part in enumerate(parts):
        block = {"name": names[k], "path": part.path, "prefix": part.prefix,
                 "nodes": sum(1 for n in graph.nodes if part_of(n.name, parts) == k),
                 "latency_ms": _ms(ev.latency_ns[k]), "latency_without_contention_ms": _ms(ev.latency_free_ns[k]),
                 "contention_ms": _ms(ev.latency_ns[k] - ev.latency_free_ns[k]),
                 "busy_ms": {e: _ms(ev.busy.get((k, e), 0)) for e in engines if (k, e) in ev.busy},
                 "rate_fps": multi.rates.get(names[k]), "latency_cap_ms": multi.latency_caps.get(names[k]),
                 "weight": multi.weights.get(names[k], 1.0 if multi.objective == "weighted" else None)}
        models.append(block)
    plan["models"] = models
    plan["multi"] = {
        "schema": MULTI_SCHEMA, "objective": multi.objective, "objective_unit": unit,
        "period": "cycle (busiest engine)" if multi.objective == "throughput" else "makespan",
        "period_ms": _ms(ev.period_ns), "period_without_contention_ms": _ms(ev.free_period_ns),
        "contention_ms": _ms(ev.contention_ns),
        "contention": {"on": multi.concurrent(len(parts)), "source": CONTENTION_SOURCE,
                       "pressure_pct": dict(ev.pressure_pct),
                       "extra_ms": {e: _ms(sum(v for (_, f), v in ev.extra.items() if f == e)) for e in engines}},
        "load_ms": {e: _ms(v) for e, v in ev.load_ns.items()},
        "utilisation": dict(ev.utilisation),
        "energy_mj": plan["predicted"]["energy_mj"], "power": _power_json(power),
        "gpu_busy_share": plan["predicted"]["gpu_busy_share"], "gpu_budget": multi.gpu_budget,
        "makespan_cap_ms": multi.cap_ms,
    }
    for name, entry in plan["baselines"].items():
        s = scored[name]
        entry.update({"latency_ms": _ms(s.period_ns), "objective": value(s.objective),
                      "energy_mj": round(s.energy_pj / 1e9, 6) if s.energy_pj is not None else None,
                      "gpu_busy_share": round(s.load_ns.get("gpu", 0) / s.period_ns, 6) if s.period_ns else None,
                      "meets_request": meets(s, names, multi),
                      "speedup": round(s.period_ns / ev.period_ns, 4) if ev.period_ns else None,
                      "models_ms": [_ms(v) for v in s.latency_ns]})
    for entry in plan["baselines"].values():  # absent, not null, where a figure does not exist (typed Plan)
        for key in [k for k, v in entry.items() if v is None and k in ("energy_mj", "gpu_busy_share")]:
            del entry[key]
    if "one_per_engine" in scored:
        s = scored["one_per_engine"]
        best = next(n for n in scored if n.startswith("one_per_engine[") and scored[n] is s)
        plan["baselines"]["one_per_engine"] = {
            "latency_ms": _ms(s.period_ns), "objective": value(s.objective), "assignment": best[15:-1].split(","),
            "energy_mj": round(s.energy_pj / 1e9, 6) if s.energy_pj is not None else None,
            "gpu_busy_share": round(s.load_ns.get("gpu", 0) / s.period_ns, 6) if s.period_ns else None,
            "meets_request": meets(s, names, multi),
            "speedup": round(s.period_ns / ev.period_ns, 4) if ev.period_ns else None,
            "models_ms": [_ms(v) for v in s.latency_ns], "throughput_fps": round(1e9 / s.period_ns, 3),
            "subgraphs": len({p.engine for p in base_placements})}
        plan["baselines"]["one_per_engine"] = {k: v for k, v in plan["baselines"]["one_per_engine"].items()
                                               if v is not None or k == "speedup"}
    if len(parts) > 1:
        plan["model"]["models"] = [model_block_of(p) for p in parts]


def _power_json(power: Power | None) -> dict[str, Any] | None:
    if power is None:
        return None
    return {"engine_w": {e: mw / 1000 for e, mw in sorted(power.engine_mw.items())}, "idle_w": power.idle_mw / 1000,
            "budget_w": power.budget_w, "source": power.source}


def model_block_of(part: Part) -> dict[str, Any]:
    import hashlib

    data = Path(part.path).read_bytes()
    return {"name": part.name, "path": part.path, "sha256": hashlib.sha256(data).hexdigest()}


__all__ = ["MERGED_NAME", "MultiPlanned", "model_block", "optimize_multi"]
