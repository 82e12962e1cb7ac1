"""The per-core DP bound never exceeds the throughput optimum (brute force over every plan, loadable partition
and DLA core) on tiny graphs, and it sees what pooling the two cores cannot: one DLA run is not halved for free."""

from __future__ import annotations

import pytest

import optimizer.solver._corebound as corebound
from optimizer.solver import PlanRequest, core_bound_ns, region_bound_ns
from tests.solver.conftest import build_model, chain, concat, conv, gpu_only
from tests.solver.test_cpsat import _model
from tests.solver.test_cutbound import GRAPHS, _optimum

FORKS = {
    # two DLA branches that may run side by side, one per core
    "fork": lambda p: build_model(p, [conv("A", "x", "a"), conv("B", "a", "b"), conv("C", "a", "c"),
                                      concat("D", "b", "c", "y")]),
    # a branch off the DLA between two DLA convolutions
    "split": lambda p: build_model(p, [conv("A", "x", "a"), gpu_only("B", "a", "b"), conv("C", "a", "c"),
                                       concat("D", "b", "c", "d"), conv("E", "d", "y", channels=32)]),
}
SHAPES = {**GRAPHS, **FORKS}
UPPER = 10**12  # far above every plan


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("favour", [False, True])
@pytest.mark.parametrize("upper", ["optimum", "loose"])
def test_core_bound_is_at_most_the_optimum(tmp_path, favour_dla, shape, favour, upper):
    """Given the optimum itself as the upper bound (the grid at its finest) or twice it (steps twice as coarse)."""
    lm = _model(SHAPES[shape](tmp_path / "m.onnx"), "orin-agx", favour_dla if favour else None)
    optimum = _optimum(lm, shape, favour)
    bound = core_bound_ns(lm, PlanRequest(objective="throughput"), 4, optimum if upper == "optimum" else 2 * optimum)
    assert bound is not None
    assert 0 < bound <= optimum


@pytest.mark.parametrize(("shape", "limit"), [("CXCXC", 1), ("CCXC", 1), ("CCC", 1), ("CCC", 2)])
def test_core_bound_with_a_loadable_limit_is_at_most_the_optimum(tmp_path, favour_dla, shape, limit):
    lm = _model(chain(tmp_path / "m.onnx", shape), "orin-agx", favour_dla)
    optimum = _optimum(lm, shape, True, limit)
    bound = core_bound_ns(lm, PlanRequest(objective="throughput"), limit, optimum)
    assert bound is not None
    assert 0 < bound <= optimum


def test_core_bound_is_the_optimum_where_pooling_halves_a_run(tmp_path, favour_dla):
    """CCC with DLA cheap: the pooled region DP spreads the one DLA run over both cores; the per-core DP knows
    that halving it costs a copy between the cores, and lands on the brute-force optimum, above the pooled one."""
    lm = _model(chain(tmp_path / "m.onnx", "CCC"), "orin-agx", favour_dla)
    request = PlanRequest(objective="throughput")
    optimum = _optimum(lm, "CCC", True)
    core = core_bound_ns(lm, request, 4, optimum)
    assert core == optimum
    assert (region_bound_ns(lm, request, 4) or 0) < core


def test_core_bound_gives_none_past_its_region_size(tmp_path, favour_dla, monkeypatch):
    """Fork: one region of two DLA-capable groups or more; with one enumerated there is no bound."""
    lm = _model(FORKS["fork"](tmp_path / "m.onnx"), "orin-agx", favour_dla)
    request = PlanRequest(objective="throughput")
    assert core_bound_ns(lm, request, 4, UPPER) is not None
    monkeypatch.setattr(corebound, "MAX_REGION", 1)
    assert core_bound_ns(lm, request, 4, UPPER) is None


def test_core_bound_only_for_throughput_on_two_cores(tmp_path):
    lm = _model(chain(tmp_path / "m.onnx", "CXC"), "orin-agx")
    assert core_bound_ns(lm, PlanRequest(objective="latency"), 4, UPPER) is None
    assert core_bound_ns(lm, PlanRequest(objective="dual-stream"), 4, UPPER) is None
    assert core_bound_ns(_model(chain(tmp_path / "n.onnx", "CXC"), "rk3588"), PlanRequest(objective="throughput"),
                         4, UPPER) is None


def test_core_bound_on_a_real_model_lies_between_the_pooled_bound_and_a_plan():
    """ResNet-50 on orin-agx: the per-core DP lands above the pooled region DP (a residual stage is too long to
    halve for free) and at or below a valid plan's busiest engine (the interval hint's), given that plan."""
    from optimizer.latency import evaluate
    from optimizer.solver import interval_hint
    from tests.conftest import ZOO

    path = ZOO / "tv_resnet50.onnx"
    if not path.exists():
        pytest.skip("zoo not present")
    lm = _model(str(path), "orin-agx")
    request = PlanRequest(objective="throughput")
    plan = interval_hint(lm, request.allowed_precisions, lambda b: max(b.busy_ns.values()), 2, 4)
    assert plan is not None
    upper = max(evaluate(lm, plan).busy_ns.values())
    bound = core_bound_ns(lm, request, 4, upper)
    assert bound is not None
    assert (region_bound_ns(lm, request, 4) or 0) * 1.05 < bound <= upper
