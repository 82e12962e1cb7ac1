"""Bounds before the exact model: never above the brute-force optimum, and tight where they should be."""

from __future__ import annotations

import math

import pytest

from optimizer.solver import PlanRequest, cheapest_bound_ns, loadable_limit, lower_bound_ns, lp_bound_ns
from optimizer.solver._bounds import latency_lp_ns, throughput_lp_ns
from tests.solver.conftest import chain
from tests.solver.test_cpsat import TINY, _model, brute_force, brute_force_by_cores

SHAPES = {**TINY, "long": lambda p: chain(p, "CXCXCXC"), "convs": lambda p: chain(p, "CCCC")}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("objective", ["latency", "throughput", "dual-stream"])
@pytest.mark.parametrize("favour", [False, True])
def test_lp_bound_is_a_bound_on_jetson(tmp_path, favour_dla, shape, objective, favour):
    lm = _model(SHAPES[shape](tmp_path / "m.onnx"), "orin-agx", favour_dla if favour else None)
    request = PlanRequest(objective=objective)
    optimum = brute_force(lm, objective, loadable_limit(request, 4))
    lp = lp_bound_ns(lm, request)
    assert lp is not None and lp <= optimum
    raised = latency_lp_ns(lm, request)  # with the one launch a plan on the DLA pays
    assert raised is not None and lp <= raised <= optimum
    launched = throughput_lp_ns(lm, request)  # throughput: each DLA core in use pays one launch
    assert launched is not None and lp <= launched <= optimum
    best = raised if objective == "latency" else lp
    assert cheapest_bound_ns(lm, request) <= lower_bound_ns(lm, request) == max(best, cheapest_bound_ns(lm, request))


@pytest.mark.parametrize("shape", ["long", "chain"])
def test_the_launch_raised_lp_meets_the_optimum_of_a_dla_chain(tmp_path, favour_dla, shape):
    """The LP leaves loadable launches out; on a chain DLA wins outright the optimum is the LP plus one
    launch, and the raised bound proves it exactly."""
    lm = _model(SHAPES[shape](tmp_path / "m.onnx"), "orin-agx", favour_dla)
    request = PlanRequest()
    optimum = brute_force(lm, "latency")
    lp = lp_bound_ns(lm, request)
    assert lp is not None and lp < optimum
    assert latency_lp_ns(lm, request) == min(optimum, lp + lm.launch_ns())


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("favour", [False, True])
def test_the_launch_raised_throughput_lp_is_below_the_optimum_and_above_the_lp(tmp_path, favour_dla, shape, favour):
    """Throughput with the DLA favoured: every DLA core in use pays at least one launch, which the plain LP
    leaves out. Each per-core-count LP bounds the plans on that many cores (brute force restricted to them),
    and the smallest is the bound: at or below the optimum, and above the plain LP on a chain of DLA
    convolutions (where, on Orin's profile, it is the optimum itself)."""
    lm = _model(SHAPES[shape](tmp_path / "m.onnx"), "orin-agx", favour_dla if favour else None)
    request = PlanRequest(objective="throughput")
    by_cores = brute_force_by_cores(lm, "throughput")
    optimum = min(by_cores.values())
    lp = lp_bound_ns(lm, request)
    launched = throughput_lp_ns(lm, request)
    assert lp is not None and launched is not None and lp <= launched <= optimum
    if shape == "convs":  # the balanced plan runs both cores, each paying its launch
        assert lp < launched
        assert favour or launched == optimum
    for cores in (1, 2):
        on_k = lp_bound_ns(lm, request, used_cores=cores, launch_ns=lm.launch_ns())
        assert on_k is not None and on_k <= by_cores.get(frozenset(range(cores)), math.inf)


@pytest.mark.parametrize("target", ["rk3588", "rk3576"])
@pytest.mark.parametrize("objective", ["latency", "throughput"])
def test_lp_bound_is_a_bound_on_rknn(tmp_path, target, objective):
    lm = _model(TINY["branch"](tmp_path / "m.onnx"), target)
    request = PlanRequest(objective=objective)
    lp = lp_bound_ns(lm, request)
    assert lp is not None and lp <= brute_force(lm, objective)


def test_lp_counts_the_transfers_a_split_must_pay(tmp_path, favour_dla):
    """DLA is cheaper per group, but a GPU-only layer in the middle forces copies: the LP pays for them
    (its bound exceeds the cheapest-option one) and still stays at or below the optimum."""
    lm = _model(chain(tmp_path / "m.onnx", "CXCXC"), "orin-agx", favour_dla)
    request = PlanRequest()
    optimum = brute_force(lm, "latency")
    assert cheapest_bound_ns(lm, request) < lp_bound_ns(lm, request) <= optimum


@pytest.mark.parametrize("objective", ["latency", "throughput", "dual-stream"])
@pytest.mark.parametrize("portfolio", [False, True])
def test_floor_skipped_probing_and_portfolio_keep_the_brute_force_optimum(tmp_path, favour_dla, objective,
                                                                          portfolio, monkeypatch):
    """The bound as the objective's floor, probing off (the hint claimed within 1% of the bound) and the
    level-1/level-2 portfolio change how CP-SAT searches, never what it proves."""
    import optimizer.solver._cpsat as cpsat
    from optimizer.check import check_graph
    from optimizer.solver import Budget, PlanModel
    from tests.solver.test_cpsat import CATALOG

    if not portfolio:
        monkeypatch.setattr(cpsat, "PORTFOLIO_MIN_S", 1e9)
    lm = _model(chain(tmp_path / "m.onnx", "CXCXCXC"), "orin-agx", favour_dla)
    request = PlanRequest(objective=objective)
    optimum = brute_force(lm, objective, loadable_limit(request, 4))
    bound = lower_bound_ns(lm, request)
    model = PlanModel(lm, check_graph(lm.graph, CATALOG, "orin-agx"), CATALOG, request)
    result = model.solve(None, Budget(60, deterministic_s=5.0), bound, hint_ns=bound)
    assert not model.probing and model.floor_index >= 0
    assert result.status == "OPTIMAL" and result.objective_ns == optimum and result.bound_ns == optimum
