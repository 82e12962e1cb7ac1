"""Dual-stream (seed 004: camera 0 on DLA0, camera 1 on DLA1) under DLA-LOADABLES (seed 000 §12: at most
four DLA loadables in use at once). Each stream runs the plan's loadables on its own core, so a plan with
N loadables has 2N in use: N = 2 (4 at once) is the most allowed, N = 3 (6 at once) is refused. A count of
5 cannot occur: the two streams always hold the same number."""

from __future__ import annotations

import pytest

from optimizer.catalog import load_catalog
from optimizer.plan import optimize, validate_plan
from optimizer.solver import PlanRequest
from optimizer.solver._cpsat import loadable_limit
from tests.solver.conftest import chain
from tests.solver.test_cpsat import _model, brute_force

CATALOG = load_catalog()
AT_ONCE = int(CATALOG.rule("DLA-LOADABLES").params["max"])


def _plan(path, objective, profile):
    return optimize(str(path), "orin-agx", PlanRequest(objective=objective), profile_path=profile)


def _loadables(plan) -> int:
    return sum(s.device.startswith("dla") for s in plan.subgraphs)


def test_the_limit_is_per_stream_half_of_the_rule():
    assert AT_ONCE == 4
    assert loadable_limit(PlanRequest(objective="dual-stream"), AT_ONCE) == 2
    assert loadable_limit(PlanRequest(objective="latency"), AT_ONCE) == 4
    assert loadable_limit(PlanRequest(objective="dual-stream", max_loadables=1), AT_ONCE) == 1
    assert loadable_limit(PlanRequest(objective="dual-stream", max_loadables=4), AT_ONCE) == 2


def test_dual_stream_plans_two_loadables_where_one_stream_would_use_four(tmp_path, favour_dla):
    path = chain(tmp_path / "m.onnx", "CXCXCXC")  # four convs split by GPU-only ops: four DLA regions
    single = _plan(path, "latency", favour_dla).plan
    assert _loadables(single) == 4  # one stream: every conv on its own loadable
    dual = _plan(path, "dual-stream", favour_dla).plan
    assert _loadables(dual) == 2  # two streams: 2 x 2 = 4 loadables at once, the rule's maximum
    assert dual.solver.status == "OPTIMAL"
    assert validate_plan(dual, CATALOG, str(path)) == []


def test_dual_stream_is_optimal_under_the_limit(tmp_path, favour_dla):
    path = chain(tmp_path / "m.onnx", "CXCXC")
    planned = _plan(path, "dual-stream", favour_dla)
    busy = planned.breakdown.busy_ns
    got = max(busy.get("dla0", 0), 2 * busy.get("gpu", 0))
    lm = _model(path, "orin-agx", favour_dla)
    assert got == brute_force(lm, "dual-stream", limit=2)
    assert got > brute_force(lm, "dual-stream", limit=3)  # the limit binds on this model


@pytest.mark.parametrize(("pattern", "ok"), [("CXC", True), ("CXCXC", False)])
def test_the_validator_counts_loadables_across_both_streams(tmp_path, favour_dla, pattern, ok):
    """A one-stream plan with 2 (4 at once) or 3 (6 at once) loadables, relabelled dual-stream."""
    path = chain(tmp_path / "m.onnx", pattern)
    plan = _plan(path, "latency", favour_dla).plan
    assert _loadables(plan) == pattern.count("C")
    plan = plan.replace(objective="dual-stream")
    problems = [p for p in validate_plan(plan, CATALOG, str(path)) if p.startswith("DLA-LOADABLES")]
    if ok:
        assert problems == []
    else:
        assert problems == ["DLA-LOADABLES: dual-stream runs the plan's 3 DLA loadables once per stream, "
                            "6 at once; at most 4"]
