"""DLA-SRAM-PER-LOADABLE: each loadable its own SRAM pool; the solver places SRAM-hungry work in the big one."""

from __future__ import annotations

import json

import pytest
from onnx import helper

from optimizer.catalog import load_catalog
from optimizer.plan import optimize
from optimizer.plan._validate import validate_plan
from optimizer.solver import PlanRequest
from tests.conftest import save_model, value, weight
from tests.test_cli import run

BIG, SMALL = 1 << 20, 1 << 17


def _two_loadables(tmp_path):
    """A: 1x1 convs on a 32x56x56 tensor (in + out ~200 KB, memory-bound); Sin (no DLA kernel) splits
    the network; B: 1x1 convs on 32x14x14 (a few KB)."""
    nodes = [helper.make_node("Conv", ["x", "wa1"], ["a1"], name="A1", kernel_shape=[1, 1]),
             helper.make_node("Conv", ["a1", "wa2"], ["a2"], name="A2", kernel_shape=[1, 1]),
             helper.make_node("Conv", ["a2", "wd"], ["d"], name="DOWN", kernel_shape=[4, 4], strides=[4, 4]),
             helper.make_node("Sin", ["d"], ["s"], name="SIN"),
             helper.make_node("Conv", ["s", "wb1"], ["b1"], name="B1", kernel_shape=[1, 1]),
             helper.make_node("Conv", ["b1", "wb2"], ["y"], name="B2", kernel_shape=[1, 1])]
    inits = [weight("wa1", [32, 32, 1, 1]), weight("wa2", [32, 32, 1, 1]), weight("wd", [32, 32, 4, 4]),
             weight("wb1", [32, 32, 1, 1]), weight("wb2", [32, 32, 1, 1])]
    return save_model(tmp_path / "two.onnx", nodes, [value("x", [1, 32, 56, 56])], [value("y", None)], inits)


PINS = {n: "dla" for n in ("A1", "A2", "DOWN", "B1", "B2")}  # the GPU alone would win on so small a network


def _plan(path, target="orin-agx", **kw):
    return optimize(str(path), target, PlanRequest(pins=PINS, **kw))


def _sram_of(plan, node):
    sub = next(s for s in plan.subgraphs if node in s.nodes)
    return sub.memory_pools.dla_sram_bytes


def test_the_sram_hungry_loadable_gets_the_big_pool_whatever_the_slot_order(tmp_path):
    path = _two_loadables(tmp_path)
    first = _plan(path, sram_per_loadable=(BIG, SMALL))
    second = _plan(path, sram_per_loadable=(SMALL, BIG))
    small = _plan(path, sram_per_loadable=(SMALL, SMALL))
    assert len([s for s in first.plan.subgraphs if s.device.startswith("dla")]) == 2
    for planned in (first, second):
        assert _sram_of(planned.plan, "A1") == BIG and _sram_of(planned.plan, "B1") == SMALL
        assert planned.run["solver"]["objective_ns"] == planned.run["solver"]["evaluated_ns"]
        assert validate_plan(planned.plan, load_catalog(), str(path)) == []
    assert first.plan.predicted.latency_ms == second.plan.predicted.latency_ms
    assert small.plan.predicted.latency_ms > first.plan.predicted.latency_ms
    uniform = _plan(path, sram_bytes=BIG)
    both_big = _plan(path, sram_per_loadable=(BIG, BIG))
    assert uniform.plan.predicted.latency_ms == both_big.plan.predicted.latency_ms


@pytest.mark.parametrize(("target", "sizes", "message"), [
    ("orin-agx", "1048576,2097152", "DLA-SRAM-ORIN"),
    ("xavier-agx", "4194304,4194304", "DLA-SRAM-XAVIER: loadable SRAM pools sum to 8388608"),
    ("orin-agx", "1048576,5000", "DLA-POOL-POW2"),
    ("rk3588", "4096", "apply to Jetson targets"),
    ("orin-agx", "1M,2M", "--loadable-sram takes comma-separated byte counts"),
])
def test_impossible_pools_are_one_line_errors(tmp_path, target, sizes, message):
    path = _two_loadables(tmp_path)
    result = run("optimize", str(path), "--target", target, "--out", str(tmp_path / "out"), "--loadable-sram", sizes)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_xavier_pools_within_the_shared_sram_plan_and_are_recorded(tmp_path):
    path = _two_loadables(tmp_path)
    pins = [arg for node in PINS for arg in ("--pin", f"{node}=dla")]
    result = run("optimize", str(path), "--target", "xavier-agx", "--out", str(tmp_path / "out"),
                 "--loadable-sram", "2097152,1048576", *pins)
    assert result.returncode == 0, result.stderr
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["request"]["sram_per_loadable"] == [2097152, 1048576]
    pools = sorted(s["memory_pools"]["dla_sram_bytes"] for s in plan["subgraphs"] if s["device"].startswith("dla"))
    assert pools == [1048576, 2097152]


def test_dram_pools_fit_what_each_loadable_needs(tmp_path):
    """A default pool smaller than a loadable's weights or activations is raised to the next power of two
    that holds them; a plan edited below its needs fails validation."""
    from optimizer.latency import load_profile

    text = load_profile("nvidia-dla").text.replace("dla_global_dram_bytes = 536870912", "dla_global_dram_bytes = 4096")
    text = text.replace("dla_local_dram_bytes = 1073741824", "dla_local_dram_bytes = 4096")
    profile = tmp_path / "tiny_pools.toml"
    profile.write_text(text)
    path = _two_loadables(tmp_path)
    planned = optimize(str(path), "orin-agx", PlanRequest(pins=PINS), profile_path=str(profile))
    document = planned.plan.to_json()  # plan.json, to be tampered with below
    big = next(s for s in document["subgraphs"] if "A1" in s["nodes"])
    needs, pools = big["memory_needs"], big["memory_pools"]
    assert needs["dla_global_dram_bytes"] == 4 * (2 * 32 * 32 + 32 * 32 * 16) // 4  # INT8 weights of A1, A2, DOWN
    assert needs["dla_local_dram_bytes"] == 2 * 32 * 56 * 56  # a1 and a2; d leaves the loadable
    for name, need in needs.items():
        assert need <= pools[name] < 2 * max(need, 4096) and pools[name] & (pools[name] - 1) == 0
    catalog = load_catalog()
    assert validate_plan(planned.plan, catalog, str(path)) == []
    big["memory_pools"]["dla_local_dram_bytes"] = 4096
    assert any("below the" in p for p in validate_plan(document, catalog, str(path)))
