"""The interval hint: its border costs are the evaluator's, its DP finds the best interval set, its plans are
valid loadables."""

from __future__ import annotations

import itertools
import math

import pytest

from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.fusion import build_groups, topological_order
from optimizer.ir import load_model
from optimizer.latency import LatencyModel, Placement, evaluate, load_profile
from optimizer.solver._hints import _convex, _fastest, _Intervals, border_descent, interval_hint
from tests.solver.conftest import add, build_model, chain, concat, conv, gpu_only
from tests.solver.test_cpsat import _convex_connected

CATALOG = load_catalog()
ALLOWED = frozenset({"int8", "fp16", "fp32"})


def _skip(path):
    """A residual chain with a GPU-only layer and a concat of two branches: borders with several consumers,
    tensors skipping over a layer, and precisions that differ between the GPU and the DLA."""
    return build_model(path, [conv("A", "x", "a"), conv("B", "a", "b"), add("C", "a", "b", "c"),
                              gpu_only("D", "c", "d"), conv("E", "d", "e"), conv("F", "e", "f"),
                              concat("G", "e", "f", "g"), conv("H", "g", "y", channels=32)])


GRAPHS = {"chain": lambda p: chain(p, "CCXCC"), "skip": _skip}


def _model(path, profile=None):
    report = check_graph(load_model(str(path)), CATALOG, "orin-agx")
    target = CATALOG.target("orin-agx")
    return LatencyModel(build_groups(report), CATALOG, target, load_profile(target.family, profile), io=report.io)


def _costs(lm):
    n = len(lm.groups.groups)
    gpu = [_fastest(lm, g, "gpu", ALLOWED) for g in range(n)]
    dla = [_fastest(lm, g, "dla", ALLOWED) for g in range(n)]
    order = topological_order(lm.groups)
    return order, gpu, dla, _Intervals(lm, order, gpu, dla, float(lm.launch_ns()), 2)


def _intervals(costs):
    n = costs.n
    return [(i, j) for i in range(n) for j in range(i, n) if costs.blocked[i] > j]


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("favour", [False, True])
def test_border_costs_are_the_evaluators(tmp_path, favour_dla, graph, favour):
    """One interval on DLA0, the rest on the GPU: the GPU time it saves and the DLA time it takes are exactly
    what the evaluator measures (copies and precision changes at its border included)."""
    lm = _model(GRAPHS[graph](tmp_path / "m.onnx"), favour_dla if favour else None)
    order, gpu, dla, costs = _costs(lm)
    all_gpu = evaluate(lm, tuple(Placement(o) for o in gpu)).busy_ns["gpu"]
    launch = lm.launch_ns()
    checked = 0
    for i, j in _intervals(costs):
        members = set(order[i:j + 1])
        placements = tuple(Placement(dla[g], 0, 0) if g in members else Placement(gpu[g])
                           for g in range(len(gpu)))
        busy = evaluate(lm, placements).busy_ns
        assert all_gpu - busy.get("gpu", 0) == pytest.approx(costs.saved(i, j), abs=1e-6)
        assert busy["dla0"] == pytest.approx(costs.dla(i, j) + launch, abs=1e-6)
        checked += 1
    assert checked >= 6


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("weight,cap", [(0.3, math.inf), (1.0, math.inf), (0.5, 3e5), (2.0, 1e5)])
def test_dp_finds_the_best_interval_set(tmp_path, favour_dla, graph, weight, cap):
    """The DP's intervals score as well as the best of every set of at most two disjoint intervals."""
    lm = _model(GRAPHS[graph](tmp_path / "m.onnx"), favour_dla)
    costs = _costs(lm)[3]
    launch = float(lm.launch_ns())

    def value(intervals):
        return sum(costs.saved(i, j) - weight * (costs.dla(i, j) + launch) for i, j in intervals)

    def fits(intervals):
        return all(costs.dla(i, j) + launch <= cap for i, j in intervals) and all(
            b[0] > a[1] for a, b in itertools.pairwise(intervals))

    candidates = _intervals(costs)
    best = max(value(s) for k in range(3) for s in itertools.combinations(candidates, k) if fits(s))
    chosen = costs.select(weight, cap, 2)
    assert len(chosen) <= 2 and fits(chosen)
    assert value(chosen) == pytest.approx(best, abs=1e-6)


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("limit", [1, 2, 4])
def test_hint_plans_are_valid_loadables(tmp_path, favour_dla, graph, limit):
    lm = _model(GRAPHS[graph](tmp_path / "m.onnx"), favour_dla)
    hint = interval_hint(lm, ALLOWED, lambda b: max(b.busy_ns.values()), 2, limit)
    assert hint is not None
    slots = sorted({p.loadable for p in hint if p.loadable >= 0})
    assert slots == list(range(len(slots))) and 1 <= len(slots) <= limit
    for slot in slots:
        members = {g for g, p in enumerate(hint) if p.loadable == slot}
        assert _convex_connected(lm, members)
        assert len({hint[g].core for g in members}) == 1
    assert all((p.loadable >= 0) == (p.option.device == "dla") for p in hint)


@pytest.mark.slow
def test_hint_keeps_to_the_exact_models_options():
    """GoogLeNet on orin-agx: its pooling layers cost the same in INT8 and FP16 on the DLA, and the exact model
    keeps only INT8 (dominant precisions); a hint in FP16 there was infeasible and sent the search elsewhere
    (0.342 -> 0.472 ms)."""
    from optimizer.solver import PlanModel, PlanRequest
    from tests.conftest import ZOO

    path = ZOO / "tv_googlenet.onnx"
    if not path.exists():
        pytest.skip("zoo not present")
    report = check_graph(load_model(str(path)), CATALOG, "orin-agx")
    target = CATALOG.target("orin-agx")
    lm = LatencyModel(build_groups(report), CATALOG, target, load_profile(target.family, None), io=report.io)
    request = PlanRequest(objective="throughput")
    hint = interval_hint(lm, request.allowed_precisions, lambda b: max(b.busy_ns.values()), 2, 4)
    assert hint is not None
    model = PlanModel(lm, report, CATALOG, request)
    for g, placement in enumerate(model.canonical(hint)):
        assert any(c.option == placement.option and (c.option.device != "dla" or c.core == placement.core)
                   for c in model.choices[g])


def _throughput(b):
    return max(b.busy_ns.values())


def _valid(lm, plan, limit):
    slots = sorted({p.loadable for p in plan if p.loadable >= 0})
    assert slots == list(range(len(slots))) and len(slots) <= limit
    for slot in slots:
        members = {g for g, p in enumerate(plan) if p.loadable == slot}
        assert _convex_connected(lm, members)
        assert len({plan[g].core for g in members}) == 1
    assert all((p.loadable >= 0) == (p.option.device == "dla") for p in plan)


def _lone(lm, g):
    """Every group on the GPU but `g`, a loadable of its own on DLA0: a poor start the descent must grow."""
    n = len(lm.groups.groups)
    plan = [Placement(_fastest(lm, k, "gpu", ALLOWED)) for k in range(n)]
    plan[g] = Placement(_fastest(lm, g, "dla", ALLOWED), 0, 0)
    return tuple(plan)


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("limit", [1, 2, 4])
def test_border_descent_keeps_valid_loadables_and_never_loses(tmp_path, favour_dla, graph, limit):
    lm = _model(GRAPHS[graph](tmp_path / "m.onnx"), favour_dla)
    starts = [_lone(lm, 0)]
    hint = interval_hint(lm, ALLOWED, _throughput, 2, limit)
    assert hint is not None
    starts.append(hint)
    for start in starts:
        plan = border_descent(lm, start, ALLOWED, _throughput, 2, limit)
        _valid(lm, plan, limit)
        assert _throughput(evaluate(lm, plan)) <= _throughput(evaluate(lm, start))
        assert plan == border_descent(lm, start, ALLOWED, _throughput, 2, limit)  # deterministic
        # a descent ends where no single move improves the top: started again from its result, it stays
        again = border_descent(lm, plan, ALLOWED, _throughput, 2, limit)
        assert _throughput(evaluate(lm, again)) == _throughput(evaluate(lm, plan))


def test_border_descent_grows_a_lone_loadable(tmp_path, favour_dla):
    """CCXCC with the DLA favoured: one Conv alone on DLA0 leaves the GPU busiest; the descent moves its
    neighbour in, starts the second core's loadable and ends strictly better."""
    lm = _model(chain(tmp_path / "m.onnx", "CCXCC"), favour_dla)
    start = _lone(lm, 0)
    plan = border_descent(lm, start, ALLOWED, _throughput, 2, 4)
    assert _throughput(evaluate(lm, plan)) < _throughput(evaluate(lm, start))
    assert sum(p.option.device == "dla" for p in plan) > 1


def test_convex_at_the_boundary():
    """A -> B -> C, A -> C: {A, C} is left through B and re-entered (not convex); {A, B, C} and {B, C} are."""
    succ = {0: [1, 2], 1: [2]}
    assert not _convex({0, 2}, succ)
    assert _convex({0, 1, 2}, succ)
    assert _convex({1, 2}, succ)
    assert _convex({0, 1}, succ)
