"""Several models in one CP-SAT model: equal to brute force under every objective, the loadable limit
held across models, contention and energy in the plan, the CLI as a user runs it."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from onnx import helper

import optimizer.solver._cpsat as cpsat
from optimizer.catalog import load_catalog
from optimizer.fileio import dumps_json
from optimizer.latency import Placement, group_options
from optimizer.multi import optimize_multi
from optimizer.multi._evaluate import meets, multi_evaluate
from optimizer.plan import validate_plan
from optimizer.plan._types import Plan, unknown_fields
from optimizer.solver import PlanRequest
from optimizer.solver._multi import MultiRequest
from tests.conftest import save_model, value, weight
from tests.solver.conftest import FAVOUR_DLA
from tests.solver.test_cpsat import _convex_connected, _partitions

CATALOG = load_catalog()
INT8 = frozenset({"int8"})
# GPU and DLA close in speed, memory-bound convolutions: both engines pay, and contention binds.
BALANCED = FAVOUR_DLA.replace("layer_overhead_us = 400.0", "layer_overhead_us = 2.0").replace(
    "conv = 0.01, dwconv = 0.01, gconv = 0.01, deconv = 0.01, matmul = 0.01, vector = 0.01",
    "conv = 0.05, dwconv = 0.05, gconv = 0.05, deconv = 0.05, matmul = 0.05, vector = 0.5")


def big_chain(path: Path, pattern: str, hw: int = 128) -> Path:
    """'CXC': Conv -> Exp (GPU only) -> Conv on 1x16xHWxHW, each named by letter and position."""
    nodes, inits, src = [], [], "x"
    for i, kind in enumerate(pattern):
        dst = "y" if i == len(pattern) - 1 else f"t{i}"
        if kind == "C":
            nodes.append(helper.make_node("Conv", [src, f"C{i}_w"], [dst], name=f"C{i}", kernel_shape=[3, 3],
                                          pads=[1, 1, 1, 1]))
            inits.append(weight(f"C{i}_w", [16, 16, 3, 3]))
        else:
            nodes.append(helper.make_node("Exp", [src], [dst], name=f"X{i}"))
        src = dst
    return save_model(path, nodes, [value("x", [1, 16, hw, hw])], [value("y", None)], inits)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[list[str], str]:
    profile = tmp_path / "balanced.toml"
    profile.write_text(BALANCED)
    return [str(big_chain(tmp_path / "a.onnx", "CXC")), str(big_chain(tmp_path / "b.onnx", "CC"))], str(profile)


def brute_force(mp, multi: MultiRequest, limit: int = 4) -> int:
    """Every option, loadable partition and DLA core of every group of both models; the best plan that
    meets the request, scored by the same evaluator."""
    planned = mp.planned
    lm = planned.model
    group_part = [0 if g.anchor.startswith("a/") else 1 for g in planned.groups.groups]
    names = ("a", "b")
    options = [group_options(lm, g, INT8) for g in range(len(lm.groups.groups))]
    bytes_of = [{o: round(lm.work(lm.groups.groups[g], o).weight_bytes + lm.work(lm.groups.groups[g], o).act_bytes)
                 for o in options[g]} for g in range(len(options))]
    best = math.inf
    for combo in itertools.product(*options):
        dla = [g for g, o in enumerate(combo) if o.device == "dla"]
        for part in _partitions(dla):
            if len(part) > limit or not all(_convex_connected(lm, set(block)) for block in part):
                continue
            for cores in itertools.product((0, 1), repeat=len(part)):
                label = {g: (k, cores[k]) for k, block in enumerate(part) for g in block}
                placements = tuple(Placement(o, core=label.get(g, (0, 0))[1], loadable=label.get(g, (-1, 0))[0])
                                   for g, o in enumerate(combo))
                ev = multi_evaluate(lm, placements, group_part, names, multi, mp.plan and
                                    _power(lm), bytes_of)
                if meets(ev, names, multi):
                    best = min(best, ev.objective)
    return int(best)


def _power(lm):
    from optimizer.latency._energy import target_power

    return target_power(lm.target)


def _plan(paths, profile, multi, **request):
    return optimize_multi(paths, "orin-agx", PlanRequest(allowed_precisions=INT8, **request), multi,
                          profile_path=profile)


CASES = {
    "makespan": MultiRequest(objective="makespan"),
    "throughput": MultiRequest(objective="throughput"),
    "rates": MultiRequest(objective="throughput", rates={"a": 2000, "b": 3000}),
    "weighted": MultiRequest(objective="weighted", weights={"a": 3, "b": 1}),
    "energy-capped": MultiRequest(objective="energy", cap_ms=0.05),
    "gpu-budget": MultiRequest(objective="makespan", gpu_budget=0.8),
    "model-cap": MultiRequest(objective="makespan", latency_caps={"b": 0.03}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_multi_matches_brute_force(pair, case):
    paths, profile = pair
    multi = CASES[case]
    mp = _plan(paths, profile, multi)
    plan = mp.plan
    assert plan["solver"]["status"] == "OPTIMAL"
    assert mp.evaluation.objective == brute_force(mp, multi)
    assert validate_plan(plan, CATALOG, None, graph=mp.planned.report.graph) == []


def test_contention_is_in_the_objective_and_the_report(pair):
    paths, profile = pair
    mp = _plan(paths, profile, MultiRequest(objective="makespan"))
    multi = mp.plan["multi"]
    assert multi["contention"]["on"] and multi["contention_ms"] > 0
    assert {layer["device"] for layer in mp.plan["layers"]} >= {"gpu"}
    off = _plan(paths, profile, MultiRequest(objective="makespan", contention=False))
    assert off.plan["multi"]["contention_ms"] == 0
    assert off.evaluation.period_ns <= mp.evaluation.period_ns  # contention only ever adds time


def test_loadable_limit_holds_across_models(pair, monkeypatch):
    """With one loadable for both models together the plan is worse than without the limit: the
    limit binds across models (counting per model would pass a plan TensorRT cannot hold at once)."""
    paths, profile = pair
    multi = MultiRequest(objective="throughput")
    mp = _plan(paths, profile, multi, max_loadables=1)
    used = {layer["subgraph"] for layer in mp.plan["layers"] if layer["device"].startswith("dla")}
    assert len(used) <= 1
    assert mp.evaluation.objective == brute_force(mp, multi, limit=1)
    monkeypatch.setattr(cpsat, "loadable_limit", lambda request, at_once: 4)  # the limit removed
    loose = _plan(paths, profile, multi, max_loadables=1)
    assert loose.evaluation.objective < mp.evaluation.objective


def test_cli_two_models_writes_a_valid_plan_and_export_cuts_it(pair, tmp_path):
    paths, profile = pair
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "optimizer", "optimize", *paths, "--target", "orin-agx",
                          "--out", str(out), "--profile", profile, "--rate", "a=1000", "--rate", "b=1000",
                          "--objective", "throughput"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "contention" in run.stdout and "energy" in run.stdout
    plan = json.loads((out / "plan.json").read_text())
    assert [m["name"] for m in plan["models"]] == ["a", "b"]
    assert plan["predicted"]["energy_mj"] > 0 and 0 <= plan["predicted"]["gpu_busy_share"] <= 1
    assert validate_plan(plan, CATALOG, str(out / "models.onnx")) == []
    typed = Plan.from_json(plan)
    assert unknown_fields(typed) == [] or not unknown_fields(typed)
    assert dumps_json(typed.to_json()) == (out / "plan.json").read_text()
    exported = subprocess.run([sys.executable, "-m", "optimizer", "export", str(out / "plan.json"), "--out",
                               str(tmp_path / "x")], capture_output=True, text=True)
    assert exported.returncode == 0, exported.stderr


def test_bad_requests_exit_2_with_one_line(pair, tmp_path):
    paths, _ = pair
    for extra, words in ((["--rate", "zz=3", "--objective", "throughput"], "no model named 'zz'"),
                         (["--rate", "a=3", "--objective", "throughput"], "every model or none"),
                         (["--gpu-budget", "2"], "--gpu-budget")):
        run = subprocess.run([sys.executable, "-m", "optimizer", "optimize", *paths, "--target", "orin-agx",
                              "--out", str(tmp_path / "o"), *extra], capture_output=True, text=True)
        assert run.returncode == 2 and words in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_past_the_exact_size_fixed_point_rounds_never_lose_to_a_baseline(tmp_path, monkeypatch):
    """Two ResNet-18s (62 layer groups) take the fixed-point contention rounds: a valid plan, a bound no
    higher than the plan, and never worse than the best baseline under the exact evaluator. The DLA-offload
    seed and polish only ever hand over a strictly better assignment that keeps the loadable limit, with DLA
    groups on TensorRT's DLA option, and the plan is no worse than the seed."""
    import optimizer.multi._build as build

    seeds: list[tuple[int, int | None, int]] = []
    original = build._offload_seed

    def recording(lm, start, trt, limit, allowed, score, names, multi):
        out = original(lm, start, trt, limit, allowed, score, names, multi)
        if out is not None:
            assert len({p.loadable for p in out if p.option.device == "dla"}) <= limit
            assert all(p.option == trt[g].option for g, p in enumerate(out) if p.option.device == "dla")
        seeds.append((score(start).objective, None if out is None else score(out).objective, limit))
        return out

    monkeypatch.setattr(build, "_offload_seed", recording)
    example = str(Path(__file__).resolve().parents[2] / "examples" / "resnet18.onnx")
    copy = tmp_path / "second.onnx"
    copy.write_bytes(Path(example).read_bytes())
    mp = optimize_multi([example, str(copy)], "orin-agx", PlanRequest(time_limit_s=20),
                        MultiRequest(objective="makespan"))
    assert len(seeds) >= 3  # seeds from gpu_only and the one_per_engine assignments, the polish after the solve
    assert all(out is None or out < start for start, out, _ in seeds)
    seeded = min(start if out is None else out for start, out, _ in seeds[:-1])
    assert mp.evaluation.objective <= seeded
    plan = mp.plan
    assert len(mp.planned.groups.groups) > 40
    assert any("fixed-point rounds" in w for w in plan["warnings"])
    assert plan["solver"]["bound_ms"] <= plan["solver"]["objective_ms"]
    best = min(b["objective"] for b in plan["baselines"].values() if b.get("meets_request", True))
    assert plan["solver"]["objective_ms"] <= best + 1e-9
    assert validate_plan(plan, CATALOG, None, graph=mp.planned.report.graph) == []
