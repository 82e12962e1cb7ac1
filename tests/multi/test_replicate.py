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
    # both run their engines at once: the choice is made with shared-DRAM contention, which only slows
    assert rep["fps_with_contention"] <= rep["fps"] and rep["pipelined_fps_with_contention"] <= pipelined
    assert rep["chosen"] == ("replication" if rep["fps_with_contention"] > rep["pipelined_fps_with_contention"]
                             else "pipelining")
    assert ("replicate" if rep["chosen"] == "replication" else "pipelined plan is faster") in rep["why"]


def test_contended_pipelined_cycle_is_the_multi_planners(tmp_path):
    """The pipelined plan's contended cycle is what the multi-model evaluator scores for the same placements
    (one formula for contention), and the copies' contended cycle is at least their plain one."""
    from optimizer.latency._energy import target_power
    from optimizer.multi._evaluate import group_bytes, multi_evaluate
    from optimizer.plan._replicate import contended_cycle_ns, engine_use, replication
    from optimizer.solver._multi import MultiRequest
    from tests.multi.test_multi_solver import BALANCED

    path = big_chain(tmp_path / "m.onnx", "CCC")
    profile = tmp_path / "balanced.toml"
    profile.write_text(BALANCED)
    planned = optimize(str(path), "orin-agx", PlanRequest(objective="throughput", time_limit_s=10),
                       profile_path=str(profile))
    lm, placements = planned.model, planned.placements
    options = {g: (p.option,) for g, p in enumerate(placements)}
    multi = multi_evaluate(lm, placements, [0] * len(placements), ("m",), MultiRequest(objective="throughput"),
                           target_power(lm.target), group_bytes(lm, options))
    ours = contended_cycle_ns(lm, [(1.0, engine_use(lm, placements))])
    assert multi.period_ns > multi.free_period_ns  # contention binds here
    assert abs(ours - multi.period_ns) <= 2  # ns: extra_ns rounds each model's term up
    rep = replication(lm, 4)
    assert rep is not None and rep.contended_ns >= rep.cycle_ns


def test_latency_plans_carry_no_replication(tmp_path):
    path = big_chain(tmp_path / "m.onnx", "CC")
    planned = optimize(str(path), "orin-agx", PlanRequest(objective="latency", time_limit_s=10))
    plan = planned.plan.to_json()
    assert "replication" not in plan
    assert plan["predicted"]["energy_mj"] > 0
