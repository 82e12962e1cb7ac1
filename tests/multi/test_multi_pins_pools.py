"""Pins (partition points) and per-loadable SRAM pools in the multi-model planner: equal to brute force over
every option, loadable partition, slot and core that keeps the pins; the plan records and builds them."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path

import pytest

from optimizer.catalog import load_catalog
from optimizer.latency import Placement, group_options
from optimizer.latency._energy import target_power
from optimizer.multi import optimize_multi
from optimizer.multi._build import honours_pins
from optimizer.multi._evaluate import meets, multi_evaluate
from optimizer.plan import validate_plan
from optimizer.solver import PlanRequest
from optimizer.solver._multi import MultiRequest
from tests.multi.test_multi_solver import BALANCED, big_chain
from tests.solver.test_cpsat import _convex_connected, _partitions

CATALOG = load_catalog()
INT8 = frozenset({"int8"})
SMALL, LARGE = 4096, 1 << 20
def _pooled_profile(text: str) -> str:
    """BALANCED with a memory-bound DLA that reads activations fitting its loadable's pool 4x faster (a 1 MiB
    pool holds the 256 KiB maps of these chains, 4 KiB does not)."""
    head, dla = text.split("[devices.dla]", 1)
    body, rest = dla.split("[loadable]", 1)
    body = body.replace("sram_speedup = 1.0", "sram_speedup = 4.0").replace("bandwidth_efficiency = 1.0",
                                                                             "bandwidth_efficiency = 0.25")
    return f"{head}[devices.dla]{body}[loadable]{rest}"


@pytest.fixture
def pair(tmp_path: Path) -> tuple[list[str], str]:
    profile = tmp_path / "pooled.toml"
    profile.write_text(_pooled_profile(BALANCED))
    return [str(big_chain(tmp_path / "a.onnx", "CXC")), str(big_chain(tmp_path / "b.onnx", "CC"))], str(profile)


def brute_force(mp, multi: MultiRequest, pins: dict[str, str], limit: int = 4) -> int:
    """Every option, loadable partition, order of the slots in use (each has its own pool) and DLA core; the best
    assignment that keeps the pins and meets the request, by the same evaluator."""
    lm = mp.planned.model
    group_part = [0 if g.anchor.startswith("a/") else 1 for g in mp.planned.groups.groups]
    names = ("a", "b")
    options = [group_options(lm, g, INT8) for g in range(len(lm.groups.groups))]
    bytes_of = [{o: round(lm.work(lm.groups.groups[g], o).weight_bytes + lm.work(lm.groups.groups[g], o).act_bytes)
                 for o in options[g]} for g in range(len(options))]
    power = target_power(lm.target)
    best = math.inf
    for combo in itertools.product(*options):
        dla = [g for g, o in enumerate(combo) if o.device == "dla"]
        for part in _partitions(dla):
            if len(part) > limit or not all(_convex_connected(lm, set(block)) for block in part):
                continue
            for slots in itertools.permutations(range(len(part))):  # loadables take slots 0, 1, ... in use
                for cores in itertools.product((0, 1), repeat=len(part)):
                    label = {g: (slots[k], cores[k]) for k, block in enumerate(part) for g in block}
                    placements = tuple(Placement(o, core=label.get(g, (-1, 0))[1], loadable=label.get(g, (-1, 0))[0])
                                       for g, o in enumerate(combo))
                    if not honours_pins(lm, placements, pins):
                        continue
                    ev = multi_evaluate(lm, placements, group_part, names, multi, power, bytes_of)
                    if meets(ev, names, multi):
                        best = min(best, ev.objective)
    return int(best)


CASES = {
    "makespan-mixed-pools": (MultiRequest(objective="makespan"), {}, (SMALL, LARGE, SMALL, SMALL)),
    "throughput-one-large-pool": (MultiRequest(objective="throughput"), {}, (LARGE, SMALL, SMALL, SMALL)),
    "makespan-pinned": (MultiRequest(objective="makespan"), {"a/C0": "gpu", "b/C1": "dla1"}, (SMALL, LARGE, LARGE,
                                                                                              SMALL)),
    "weighted-pinned-dla": (MultiRequest(objective="weighted", weights={"a": 1, "b": 3}), {"a/C2": "dla"}, ()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pins_and_pools_match_brute_force(pair, case):
    paths, profile = pair
    multi, pins, pools = CASES[case]
    mp = optimize_multi(paths, "orin-agx", PlanRequest(allowed_precisions=INT8, pins=pins, sram_per_loadable=pools,
                                                       time_limit_s=20), multi, profile_path=profile)
    plan = mp.plan
    assert plan["solver"]["status"] == "OPTIMAL"
    assert mp.evaluation.objective == brute_force(mp, multi, pins)
    assert plan["request"]["pins"] == dict(sorted(pins.items()))
    assert plan["request"]["sram_per_loadable"] == list(pools)
    devices = {layer["node"]: layer["device"] for layer in plan["layers"]}
    for node, device in pins.items():
        assert devices[node] == device or (device == "dla" and devices[node].startswith("dla"))
    for sub in plan["subgraphs"]:
        if sub["device"].startswith("dla") and pools:
            assert sub["memory_pools"]["dla_sram_bytes"] in pools
    assert validate_plan(plan, CATALOG, None, graph=mp.planned.report.graph) == []


def test_pools_change_the_plan_the_brute_force_confirms(pair):
    """The pools are in the objective: small pools cost the DLA its SRAM speedup (summed latencies: every DLA
    nanosecond counts)."""
    paths, profile = pair
    multi = MultiRequest(objective="weighted")
    small = optimize_multi(paths, "orin-agx", PlanRequest(allowed_precisions=INT8, sram_per_loadable=(SMALL,) * 4,
                                                          time_limit_s=20), multi, profile_path=profile)
    large = optimize_multi(paths, "orin-agx", PlanRequest(allowed_precisions=INT8, sram_per_loadable=(LARGE,) * 4,
                                                          time_limit_s=20), multi, profile_path=profile)
    assert large.evaluation.objective < small.evaluation.objective


def test_cli_takes_pins_and_loadable_pools_with_several_models(pair, tmp_path):
    paths, profile = pair
    run = subprocess.run([sys.executable, "-m", "optimizer", "optimize", *paths, "--target", "orin-agx", "--out",
                          str(tmp_path / "o"), "--profile", profile, "--pin", "a/C0=gpu", "--loadable-sram",
                          f"{SMALL},{LARGE},{SMALL},{SMALL}"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    bad = subprocess.run([sys.executable, "-m", "optimizer", "optimize", *paths, "--target", "orin-agx", "--out",
                          str(tmp_path / "p"), "--loadable-sram", "5000"], capture_output=True, text=True)
    assert bad.returncode == 2 and "DLA-POOL-POW2" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_several_models_plan_under_the_tensorrt_11_rules(pair, tmp_path):
    """--trt 11 reaches the multi-model planner: its DLA rule set is the one checked and recorded."""
    import json

    paths, profile = pair
    run = subprocess.run([sys.executable, "-m", "optimizer", "optimize", *paths, "--target", "orin-agx", "--out",
                          str(tmp_path / "o"), "--profile", profile, "--trt", "11"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "o" / "plan.json").read_text())["tensorrt_rules"] == "11"
