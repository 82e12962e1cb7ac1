"""The region DP bound never exceeds the throughput optimum (brute force over every plan) on tiny graphs."""

from __future__ import annotations

import numpy as np
import pytest

import optimizer.solver._cutbound as cutbound
from optimizer.latency import evaluate
from optimizer.solver import PlanRequest, region_bound_ns
from tests.conftest import ZOO
from tests.solver.conftest import add, build_model, chain, conv
from tests.solver.test_cpsat import TINY, _model, brute_force

GRAPHS = {**TINY,
          "residual": lambda p: build_model(p, [conv("A", "x", "a"), conv("B", "a", "b"), add("C", "a", "b", "y")]),
          "long": lambda p: chain(p, "CCXC")}


_OPTIMA: dict[tuple[str, bool, int], int] = {}


def _optimum(lm, shape: str, favour: bool, limit: int = 4) -> int:
    """The brute-force throughput optimum, enumerated once per graph, profile and loadable limit (most of
    these tests' time)."""
    if (shape, favour, limit) not in _OPTIMA:
        _OPTIMA[shape, favour, limit] = brute_force(lm, "throughput", limit)
    return _OPTIMA[shape, favour, limit]


@pytest.mark.parametrize("shape", sorted(GRAPHS))
@pytest.mark.parametrize("favour", [False, True])
@pytest.mark.parametrize("chunked", [False, True])
def test_region_bound_is_at_most_the_optimum(tmp_path, favour_dla, monkeypatch, shape, favour, chunked):
    """Also with every region cut into chunks of one DLA-capable group (how regions too large to enumerate
    are relaxed): copies between chunks and their connected parts left out, still at most the optimum."""
    if chunked:
        monkeypatch.setattr(cutbound, "MAX_REGION", 1)
    lm = _model(GRAPHS[shape](tmp_path / "m.onnx"), "orin-agx", favour_dla if favour else None)
    bound = region_bound_ns(lm, PlanRequest(objective="throughput"))
    assert bound is not None
    assert 0 < bound <= _optimum(lm, shape, favour)


@pytest.mark.parametrize(("shape", "limit"), [("CXCXC", 1), ("CCXC", 1), ("CCC", 4)])
def test_region_bound_with_a_loadable_limit_is_at_most_the_optimum(tmp_path, favour_dla, shape, limit):
    """Fewer loadables than DLA parts are no plan; cutting one part costs a copy: still at most the optimum."""
    lm = _model(chain(tmp_path / "m.onnx", shape), "orin-agx", favour_dla)
    bound = region_bound_ns(lm, PlanRequest(objective="throughput"), limit)
    assert bound is not None
    assert 0 < bound <= _optimum(lm, shape, True, limit)


def test_region_bound_counts_the_connected_dla_parts(tmp_path, favour_dla):
    """CXCXC with DLA cheap: three DLA parts. With one loadable allowed only one conv may leave the (slow)
    GPU, and the bound sees it: it is the brute-force optimum, far above the bound without a limit."""
    lm = _model(chain(tmp_path / "m.onnx", "CXCXC"), "orin-agx", favour_dla)
    request = PlanRequest(objective="throughput")
    one = region_bound_ns(lm, request, 1)
    assert one == _optimum(lm, "CXCXC", True, 1)
    assert one > 1.3 * (region_bound_ns(lm, request) or 0)


def test_busiest_core_of_one_part():
    """One DLA part of 100 us on two cores: on one core it carries the part and a launch; cut in two
    (a 5 us copy on the GPU) each core carries at least half and a launch."""
    from optimizer.solver._cutbound import QUANTUM_NS, _busiest

    gpu = np.full((2, 1001), np.inf)
    gpu[1, 1000] = 60_000.0  # one part, 100 us of DLA work, 60 us on the GPU
    assert 1000 * QUANTUM_NS == 100_000
    assert _busiest(gpu, 10_000, 2, 5_000.0, 4) == 65_000.0  # cut: max(60 + 5, 50 + 10)
    assert _busiest(gpu, 10_000, 2, 80_000.0, 4) == 110_000.0  # the cut costs more than one core's share
    assert _busiest(gpu, 10_000, 2, 5_000.0, 1) == 110_000.0  # one loadable: no cut
    assert _busiest(gpu, 10_000, 2, np.inf, 4) == 110_000.0  # no tensor between DLA groups: no cut


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
