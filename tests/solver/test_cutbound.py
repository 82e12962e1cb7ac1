"""The region DP bound never exceeds the throughput optimum (brute force over every plan) on tiny graphs."""

from __future__ import annotations

import pytest

from optimizer.latency import evaluate
from optimizer.solver import PlanRequest, region_bound_ns
from tests.conftest import ZOO
from tests.solver.conftest import add, build_model, chain, conv
from tests.solver.test_cpsat import TINY, _model, brute_force

GRAPHS = {**TINY,
          "residual": lambda p: build_model(p, [conv("A", "x", "a"), conv("B", "a", "b"), add("C", "a", "b", "y")]),
          "long": lambda p: chain(p, "CCXC")}


@pytest.mark.parametrize("shape", sorted(GRAPHS))
@pytest.mark.parametrize("favour", [False, True])
def test_region_bound_is_at_most_the_optimum(tmp_path, favour_dla, shape, favour):
    lm = _model(GRAPHS[shape](tmp_path / "m.onnx"), "orin-agx", favour_dla if favour else None)
    bound = region_bound_ns(lm, PlanRequest(objective="throughput"))
    assert bound is not None
    assert 0 < bound <= brute_force(lm, "throughput")


def test_region_bound_sees_the_copies_on_a_real_model():
    """MobileNetV2 on orin-agx: the LP splits groups between engines and pays no copy; the region DP keeps
    groups whole and lands above it, still below a valid plan's busiest engine (the interval hint's)."""
    from optimizer.solver import interval_hint, throughput_lp_ns

    path = ZOO / "tv_mobilenet_v2.onnx"
    if not path.exists():
        pytest.skip("zoo not present")
    lm = _model(str(path), "orin-agx")
    request = PlanRequest(objective="throughput")
    bound = region_bound_ns(lm, request)
    plan = interval_hint(lm, request.allowed_precisions, lambda b: max(b.busy_ns.values()), 2, 4)
    assert bound is not None and plan is not None
    assert (throughput_lp_ns(lm, request) or 0) * 1.05 < bound <= max(evaluate(lm, plan).busy_ns.values())


def test_latency_and_dual_stream_get_no_region_bound(tmp_path):
    lm = _model(chain(tmp_path / "m.onnx", "CXC"), "orin-agx")
    assert region_bound_ns(lm, PlanRequest(objective="latency")) is None
    assert region_bound_ns(lm, PlanRequest(objective="dual-stream")) is None
