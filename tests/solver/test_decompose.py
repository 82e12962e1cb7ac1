"""Regions between cut groups: every edge counted once, a bound below every plan, and the exact optimum where
the cuts are exact (groups with no DLA option)."""

from __future__ import annotations

import pytest

import optimizer.plan._build as build
from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.fusion import build_groups, topological_order
from optimizer.ir import load_model
from optimizer.latency import LatencyModel, evaluate, load_profile
from optimizer.plan import optimize, validate_plan
from optimizer.plan._baselines import gpu_only as all_on_gpu
from optimizer.solver import Budget, PlanModel, PlanRequest, lower_bound_ns
from optimizer.solver._decompose import decomposed_solve, regions, separators
from tests.solver.conftest import add, build_model, chain, conv, gpu_only

CATALOG = load_catalog()


def _model(path, target, profile):
    report = check_graph(load_model(str(path)), CATALOG, target)
    tgt = CATALOG.target(target)
    return LatencyModel(build_groups(report), CATALOG, tgt, load_profile(tgt.family, profile), io=report.io), report


def _exact(lm, report, request):
    result = PlanModel(lm, report, CATALOG, request).solve(all_on_gpu(lm), Budget(600, deterministic_s=120),
                                                          lower_bound_ns(lm, request))
    assert result.status == "OPTIMAL"
    return result.objective_ns


def _branchy(tmp_path):
    """Residual blocks, one with a GPU-only op in its branch: skips make some positions no cut."""
    parts, src = [], "x"
    for i in range(4):
        parts += [conv(f"A{i}", src, f"a{i}"), (gpu_only(f"E{i}", f"a{i}", f"e{i}") if i % 2 else
                                                 conv(f"B{i}", f"a{i}", f"e{i}")),
                  add(f"S{i}", f"e{i}", src, f"s{i}"), conv(f"C{i}", f"s{i}", "y" if i == 3 else f"c{i}")]
        src = f"c{i}"
    return build_model(tmp_path / "branchy.onnx", parts)


def test_separators_are_exactly_the_positions_no_edge_jumps(tmp_path, favour_dla):
    lm, _ = _model(_branchy(tmp_path), "orin-agx", favour_dla)
    order = topological_order(lm.groups)
    position = {g: p for p, g in enumerate(order)}
    assert all(position[a] < position[b] for a, b in lm.groups.group_edges())
    jumped = {p for a, b in lm.groups.group_edges() for p in range(position[a] + 1, position[b])}
    seps = separators(lm.groups, order)
    assert seps == [p for p in range(len(order)) if p not in jumped]
    assert 0 < len(seps) < len(order)  # the skips leave some positions out


def test_every_edge_lies_in_exactly_one_region_in_the_graphs_order(tmp_path, favour_dla):
    """Each region's edges are those of the whole graph whose consumer it holds (its first member excepted,
    after the first region) and whose producer it holds or is a model input, in the whole graph's order."""
    lm, _ = _model(_branchy(tmp_path), "orin-agx", favour_dla)
    parts = regions(lm, PlanRequest(), size=4)
    assert len(parts) >= 3
    counted = []
    for r, part in enumerate(parts):
        members = part.members
        inside = set(members[0 if r == 0 else 1:])
        expected = [e for e in lm.groups.edges if e.dst in inside and (e.src < 0 or e.src in members)]
        got = [(e.tensor, members[e.src] if e.src >= 0 else -1, members[e.dst]) for e in part.model.groups.edges]
        assert got == [(e.tensor, e.src, e.dst) for e in expected]
        counted += expected
    assert sorted(counted, key=lm.groups.edges.index) == list(lm.groups.edges)


@pytest.mark.parametrize("target", ["orin-agx", "xavier-agx"])
def test_exact_cuts_give_the_exact_optimum_and_a_bound_below_it(tmp_path, favour_dla, target):
    """Exp has no DLA option, so holding it on the GPU restricts nothing: the regions' knapsack is exact."""
    lm, report = _model(chain(tmp_path / "m.onnx", "CCCXCCCXCCCXCCC"), target, favour_dla)
    request = PlanRequest()
    optimum = _exact(lm, report, request)
    result, parts = decomposed_solve(lm, report, CATALOG, request, all_on_gpu(lm), 4, Budget(600, deterministic_s=60),
                                     size=4)
    assert parts >= 3
    assert result.objective_ns == evaluate(lm, result.placements).total_ns == optimum
    assert result.bound_ns <= optimum
    assert len({p.loadable for p in result.placements if p.loadable >= 0}) <= 4


@pytest.mark.parametrize("limit", [1, 2, 4])
def test_cuts_on_dla_groups_restrict_the_plans_never_the_bound(tmp_path, favour_dla, limit):
    """Cuts inside a DLA stretch are held on the GPU: the plan may be worse than the optimum, the bound never
    above it, and the loadable budget holds for the whole plan."""
    for name, path in (("chain", chain(tmp_path / "c.onnx", "C" * 12)), ("branchy", _branchy(tmp_path))):
        lm, report = _model(path, "orin-agx", favour_dla)
        request = PlanRequest(max_loadables=limit)
        optimum = _exact(lm, report, request)
        result, parts = decomposed_solve(lm, report, CATALOG, request, all_on_gpu(lm), limit,
                                         Budget(600, deterministic_s=60), size=3)
        assert parts >= 2, name
        assert result.bound_ns <= optimum <= result.objective_ns == evaluate(lm, result.placements).total_ns, name
        assert len({p.loadable for p in result.placements if p.loadable >= 0}) <= limit, name


def test_optimize_past_the_exact_size_plans_by_regions(tmp_path, favour_dla, monkeypatch):
    """optimize() past MAX_EXACT_GROUPS: a valid plan, as good as the exact one on exact cuts, an honest gap."""
    path = chain(tmp_path / "m.onnx", "CCCXCCCXCCCXCCC")
    exact = optimize(str(path), "orin-agx", PlanRequest(), profile_path=favour_dla)
    monkeypatch.setattr(build, "MAX_EXACT_GROUPS", 5)
    monkeypatch.setattr("optimizer.solver._decompose.REGION_GROUPS", 4)
    planned = optimize(str(path), "orin-agx", PlanRequest(), profile_path=favour_dla)
    assert validate_plan(planned.plan, CATALOG, str(path)) == []
    assert planned.plan.solver.objective_ms == exact.plan.solver.objective_ms
    assert planned.plan.solver.bound_ms <= planned.plan.solver.objective_ms
    assert planned.plan.solver.status == ("OPTIMAL" if planned.plan.solver.gap == 0 else "FEASIBLE")
    assert planned.plan.solver.gap == 0 or any("regions between cut groups" in w for w in planned.plan.warnings)


@pytest.mark.parametrize("limit", [1, 4])
def test_cuts_held_where_the_baseline_has_them_never_lose_to_it(tmp_path, favour_dla, limit):
    """Held as TensorRT's default places them (on the DLA inside one long loadable here), the cuts keep that
    baseline among the regions' plans: the result is never worse, its loadables joined across the cuts stay
    within the budget, connected and convex (the plan validates)."""
    from optimizer.plan._baselines import trt_default

    path = chain(tmp_path / "c.onnx", "C" * 12)
    lm, report = _model(path, "xavier-agx", favour_dla)
    request = PlanRequest(max_loadables=limit)
    prefer = trt_default(lm, limit)
    assert {p.option.device for p in prefer} == {"dla"}  # every cut candidate is on the DLA
    optimum = _exact(lm, report, request)
    result, parts = decomposed_solve(lm, report, CATALOG, request, all_on_gpu(lm), limit,
                                     Budget(600, deterministic_s=60), size=3, prefer=prefer)
    assert parts >= 3
    assert result.bound_ns <= optimum <= result.objective_ns <= evaluate(lm, prefer).total_ns
    assert len({p.loadable for p in result.placements if p.loadable >= 0}) <= limit
    assert not PlanModel(lm, report, CATALOG, request)._split(result.placements)


def test_a_plan_by_regions_with_loadables_across_cuts_validates(tmp_path, favour_dla, monkeypatch):
    path = chain(tmp_path / "c.onnx", "C" * 12)
    monkeypatch.setattr(build, "MAX_EXACT_GROUPS", 5)
    monkeypatch.setattr("optimizer.solver._decompose.REGION_GROUPS", 3)
    planned = optimize(str(path), "xavier-agx", PlanRequest(), profile_path=favour_dla)
    assert validate_plan(planned.plan, CATALOG, str(path)) == []
    best = min(entry.latency_ms for entry in planned.plan.baselines.values())
    assert planned.plan.solver.objective_ms <= best
    assert any(p.loadable >= 0 for p in planned.placements)


def test_a_small_budget_solves_only_the_regions_it_affords(tmp_path, favour_dla, monkeypatch):
    """With deterministic time for one region solve, one region is solved (the others keep their fall-back
    plans): the plan is valid, no better than the optimum, and the same on every run."""
    import optimizer.solver._decompose as decompose

    lm, report = _model(chain(tmp_path / "m.onnx", "CCCXCCCXCCCXCCC"), "orin-agx", favour_dla)
    request = PlanRequest()
    calls = []
    solve = decompose._solve_region
    monkeypatch.setattr(decompose, "_solve_region", lambda region, *a: calls.append(a[3]) or solve(region, *a))
    runs = [decomposed_solve(lm, report, CATALOG, request, all_on_gpu(lm), 4,
                             Budget(600, deterministic_s=decompose.MIN_SHARE_S * 5), size=4)[0] for _ in range(2)]
    assert len(calls) <= 2 * 5
    assert runs[0].placements == runs[1].placements
    assert _exact(lm, report, request) <= runs[0].objective_ns == evaluate(lm, runs[0].placements).total_ns
