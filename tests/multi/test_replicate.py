"""Replication (whole copies on GPU, DLA0, DLA1 with a frame split) against pipelining, in every throughput plan."""

from __future__ import annotations

import itertools

from optimizer.plan import optimize
from optimizer.solver import PlanRequest
from tests.multi.test_multi_solver import big_chain


def test_split_is_the_best_on_a_grid_and_the_plan_names_its_choice(tmp_path):
    path = big_chain(tmp_path / "m.onnx", "CCC")
    planned = optimize(str(path), "orin-agx", PlanRequest(objective="throughput", time_limit_s=10))
    plan = planned.plan.to_json()
    rep = plan["replication"]
    assert abs(sum(rep["split"].values()) - 1) < 1e-5
    copies = rep["copies_ms"]
    engines = sorted({e for c in copies.values() for e in c})

    def cycle(split):
        return max(sum(split[c] * copies[c].get(e, 0.0) for c in copies) for e in engines)

    names = sorted(copies)
    grid = [s for s in itertools.product([k / 20 for k in range(21)], repeat=len(names)) if abs(sum(s) - 1) < 1e-9]
    best = min(cycle(dict(zip(names, s))) for s in grid)
    assert rep["cycle_ms"] <= best + 1e-6  # the LP is at least as good as every 5% split
    assert abs(rep["cycle_ms"] - cycle(rep["split"])) < 1e-5
    pipelined = plan["predicted"]["throughput_fps"]
    assert rep["pipelined_fps"] == round(pipelined, 3)
    assert rep["chosen"] == ("replication" if rep["fps"] > pipelined else "pipelining")
    assert rep["chosen"] in rep["why"] or "pipelined plan is faster" in rep["why"] or "replicate" in rep["why"]


def test_latency_plans_carry_no_replication(tmp_path):
    path = big_chain(tmp_path / "m.onnx", "CC")
    planned = optimize(str(path), "orin-agx", PlanRequest(objective="latency", time_limit_s=10))
    plan = planned.plan.to_json()
    assert "replication" not in plan
    assert plan["predicted"]["energy_mj"] > 0
