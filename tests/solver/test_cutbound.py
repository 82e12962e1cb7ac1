"""The region DP bound never exceeds the throughput optimum (brute force over every plan) on tiny graphs."""

from __future__ import annotations

import numpy as np
import pytest

import optimizer.solver._cutbound as cutbound
from optimizer.latency import evaluate
from optimizer.solver import PlanRequest, region_bound_ns
from tests.conftest import ZOO
from tests.solver.conftest import add, build_model, chain, conv, gpu_only
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
@pytest.mark.parametrize("how", ["whole", "sweep", "chunks"])
def test_region_bound_is_at_most_the_optimum(tmp_path, favour_dla, monkeypatch, shape, favour, how):
    """Also with every region of two or more DLA-capable groups taken as a region too large to enumerate: swept
    group by group (every copy charged, parts left out), or where the sweep's state is too large, in chunks
    of one DLA-capable group (copies between chunks and their parts left out): still at most the optimum."""
    if how != "whole":
        monkeypatch.setattr(cutbound, "MAX_REGION", 1)
    if how == "chunks":
        monkeypatch.setattr(cutbound, "SWEEP_KEYS", 0)
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


def _enumerated(lm, start, region, quantum):
    """The sweep's answer by brute force: for every device of the region's DLA-capable groups, its GPU time
    with every copy (a tensor pays once per direction it crosses) and its DLA steps (each group's rounded down,
    as the state counts them), per device of the last."""
    import itertools

    inst = cutbound.instance(lm, PlanRequest(objective="throughput"))
    capable = [p for p in region if inst.dla[inst.order[p]] >= 0]
    best: dict[tuple[int, int], float] = {}
    for kind in (0, 1):
        for choice in itertools.product((0, 1), repeat=len(capable)):
            device = {start: kind, **{p: 0 for p in region}, **dict(zip(capable, choice))}
            gpu = sum(float(inst.gpu[inst.order[p]]) for p in region if device[p] == 0)
            dla = sum(int(inst.dla[inst.order[p]]) // quantum * quantum for p in region if device[p] == 1)
            for p in [start, *region[:-1]]:
                for consumers, to_dla, to_gpu, _ in inst.tensors.get(p, ()):
                    if device[p] == 0 and any(device[c] == 1 for c in consumers):
                        gpu += to_dla
                    if device[p] == 1 and any(device[c] == 0 for c in consumers):
                        gpu += to_gpu
            key = (kind, device[region[-1]], dla // quantum)
            best[key] = min(best.get(key, np.inf), gpu)
    return inst, best


@pytest.mark.parametrize("shape", ["branch", "diamond"])
@pytest.mark.parametrize("favour", [False, True])
def test_sweep_charges_what_the_enumeration_charges(tmp_path, favour_dla, shape, favour):
    """From a state of one cell per separator device, the sweep's least GPU time per (separator device, last
    device, DLA steps) is the brute-force enumeration's, taken as a frontier: every enumerated choice is met
    or beaten (a bound), and every swept cell is some choice's (nothing lower)."""
    lm = _model(GRAPHS[shape](tmp_path / "m.onnx"), "orin-agx", favour_dla if favour else None)
    inst = cutbound.instance(lm, PlanRequest(objective="throughput"))
    start, region = next((b, r) for b, r in zip(inst.bounds, inst.regions) if len(r) > 1)
    quantum = cutbound.QUANTUM_NS
    _, best = _enumerated(lm, start, region, quantum)
    steps = max(d for _, _, d in best) + 1
    for kind in (0, 1):
        state = np.full((2, 1, steps), np.inf)
        state[kind, 0, 0] = 0.0
        out = cutbound._sweep(state, start, region, inst, quantum)
        assert out is not None
        for (k, end, d), gpu in best.items():
            if k == kind:  # met or beaten by a cell with no more DLA steps
                assert out[end, 0, :d + 1].min() <= gpu + 1e-6
        for end in (0, 1):
            for d in np.flatnonzero(np.isfinite(out[end, 0])):
                assert any(k == kind and e == end and dd <= d and abs(g - out[end, 0, d]) < 1e-6
                           for (k, e, dd), g in best.items())


def test_sweep_lifts_the_region_bound_on_a_real_model():
    """YOLOv8n on xavier-agx: one region of 67 DLA-capable groups. In chunks its inner copies were left out and
    the region DP stayed far below the LP (1351 us against 1534); swept, every copy is charged and it lies above
    the LP, still at or below a valid plan's busiest engine (the interval hint's)."""
    from optimizer.solver import interval_hint, throughput_lp_ns

    path = ZOO / "yolov8n.onnx"
    if not path.exists():
        pytest.skip("zoo not present")
    lm = _model(str(path), "xavier-agx")
    request = PlanRequest(objective="throughput")
    bound = region_bound_ns(lm, request, 4)
    plan = interval_hint(lm, request.allowed_precisions, lambda b: max(b.busy_ns.values()), 2, 4)
    assert bound is not None and plan is not None
    assert (throughput_lp_ns(lm, request) or 0) < bound <= max(evaluate(lm, plan).busy_ns.values())


def _random_graph(path, seed: int, n: int):
    """A seeded random DAG of Convs, GPU-only Exps and Adds over earlier tensors, its open ends summed into y."""
    import random

    rng = random.Random(seed)
    tensors, parts = ["x"], []
    for i in range(n):
        kind = rng.choice("CCCXA") if len(tensors) >= 2 else "C"
        if kind == "A":
            a, b = rng.sample(tensors, 2)
            parts.append(add(f"N{i}", a, b, f"t{i}"))
        else:
            parts.append((conv if kind == "C" else gpu_only)(f"N{i}", rng.choice(tensors), f"t{i}"))
        tensors.append(f"t{i}")
    used = {name for node, _ in parts for name in node.input}
    open_ends = [t for t in tensors[1:] if t not in used]
    for j, t in enumerate(open_ends[1:]):
        parts.append(add(f"J{j}", open_ends[0] if j == 0 else f"j{j - 1}", t, f"j{j}"))
    parts[-1][0].output[0] = "y"
    return build_model(path, parts)


@pytest.mark.parametrize("seed", range(12))
def test_sweep_equals_the_whole_enumeration_on_random_graphs(tmp_path, favour_dla, seed):
    """On every region of a random 8-node graph, from either separator device, the sweep's least GPU time per
    (last device, DLA steps or fewer) is exactly the whole-region enumeration's taken over all part counts."""
    lm = _model(_random_graph(tmp_path / "m.onnx", seed, 8), "orin-agx", favour_dla if seed % 2 else None)
    inst = cutbound.instance(lm, PlanRequest(objective="throughput"))
    assert inst is not None
    for start, region in zip(inst.bounds, inst.regions):
        _assert_sweep_equals_whole(inst, start, region)


def _steps(inst) -> np.ndarray:
    return np.where(inst.dla >= 0, inst.dla // cutbound.QUANTUM_NS, -1)


def _entry_state(inst, kind: int) -> np.ndarray:
    """The DP state entering a region from a separator on device `kind` (0 GPU, 1 DLA), nothing spent yet."""
    steps = _steps(inst)
    state = np.full((2, cutbound.MAX_PARTS + 1, int(steps[steps > 0].sum()) + 1), np.inf)
    state[kind, 0, 0] = 0.0
    return state


def _assert_sweep_equals_whole(inst, start, region, max_region: int = cutbound.MAX_REGION) -> None:
    """From either separator device, the sweep's least GPU time per (last device, DLA steps or fewer) is exactly
    the whole-region enumeration's (run with MAX_REGION at `max_region`) taken over all part counts."""
    for kind in (0, 1):
        state = _entry_state(inst, kind)
        swept = cutbound._sweep(state, start, region, inst, cutbound.QUANTUM_NS)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(cutbound, "MAX_REGION", max(cutbound.MAX_REGION, max_region))
            whole = cutbound._advance(state, start, region, [inst.order[p] for p in region], inst.gpu, _steps(inst),
                                      inst.tensors, inst.edges, False)
        assert swept is not None and whole is not None
        for end in (0, 1):
            expected = np.minimum.accumulate(whole[end].min(axis=0))
            got = np.minimum.accumulate(swept[end].min(axis=0))
            assert np.array_equal(np.isfinite(got), np.isfinite(expected))
            assert np.allclose(got[np.isfinite(got)], expected[np.isfinite(expected)])


def _fan_out(path, n: int):
    """Conv S, n Convs each reading S's result, one Concat of their n results: at the last of them the sweep
    holds the devices of n open tensors, 2^n states."""
    from onnx import helper

    parts = [conv("S", "x", "s")] + [conv(f"B{i}", "s", f"b{i}") for i in range(n)]
    parts.append((helper.make_node("Concat", [f"b{i}" for i in range(n)], ["y"], name="J", axis=1), None))
    return build_model(path, parts)


def _ladder(path, a: int, b: int):
    """Conv S, then two Conv chains of a and b from its result, joined by one Add: one region whose sweep
    state stays small however long the chains."""
    parts = [conv("S", "x", "s")]
    for name, length in (("A", a), ("B", b)):
        src = "s"
        for i in range(length):
            parts.append(conv(f"{name}{i}", src, f"{name.lower()}{i}"))
            src = f"{name.lower()}{i}"
    parts.append(add("J", f"a{a - 1}", f"b{b - 1}", "y"))
    return build_model(path, parts)


def _capable(inst, region) -> int:
    return int((inst.dla[[inst.order[p] for p in region]] >= 0).sum())


def _largest_region(inst):
    return max(zip(inst.bounds, inst.regions), key=lambda r: _capable(inst, r[1]))


def _spy(monkeypatch) -> dict[str, list]:
    calls: dict[str, list] = {"sweep": [], "advance": []}
    sweep, advance = cutbound._sweep, cutbound._advance

    def spy_sweep(*args, **kwargs):
        out = sweep(*args, **kwargs)
        calls["sweep"].append(out is not None)
        return out

    def spy_advance(*args, **kwargs):
        calls["advance"].append(len(args[2]))
        return advance(*args, **kwargs)

    monkeypatch.setattr(cutbound, "_sweep", spy_sweep)
    monkeypatch.setattr(cutbound, "_advance", spy_advance)
    return calls


@pytest.mark.parametrize(("a", "b", "swept"), [(7, 7, False), (8, 7, True)])
def test_a_region_of_14_dla_capable_groups_is_enumerated_and_of_15_swept(tmp_path, favour_dla, monkeypatch, a, b,
                                                                         swept):
    """MAX_REGION = 14: a region of 14 DLA-capable groups (14 Convs, the Add fused into the last) is one
    chunk, enumerated whole, the sweep not called; of 15 it is swept (its state small: two chains). Either way
    the sweep equals the whole enumeration over part counts."""
    lm = _model(_ladder(tmp_path / "m.onnx", a, b), "orin-agx", favour_dla)
    inst = cutbound.instance(lm, PlanRequest(objective="throughput"))
    assert inst is not None
    start, region = _largest_region(inst)
    assert _capable(inst, region) == cutbound.MAX_REGION + int(swept)
    _assert_sweep_equals_whole(inst, start, region, _capable(inst, region))
    calls = _spy(monkeypatch)
    assert region_bound_ns(lm, PlanRequest(objective="throughput")) is not None
    assert calls["sweep"] == ([True] if swept else [])
    assert len(region) not in calls["advance"] if swept else len(region) in calls["advance"]


@pytest.mark.parametrize(("n", "fits"), [(12, True), (13, False)])
def test_the_sweep_keeps_4096_states_and_gives_up_past_them(tmp_path, favour_dla, monkeypatch, n, fits):
    """SWEEP_KEYS = 4096: n Convs fanned out of one tensor and concatenated hold 2^n device states at the last
    of them; 12 (4096 states) are swept, equal to the whole enumeration; 13 (8192) are not (None: chunks)."""
    assert cutbound.SWEEP_KEYS == 2**12
    lm = _model(_fan_out(tmp_path / "m.onnx", n), "orin-agx", favour_dla)
    inst = cutbound.instance(lm, PlanRequest(objective="throughput"))
    assert inst is not None
    start, region = _largest_region(inst)
    assert len(region) == n + 1
    if fits:
        _assert_sweep_equals_whole(inst, start, region, _capable(inst, region))
    else:
        assert cutbound._sweep(_entry_state(inst, 0), start, region, inst, cutbound.QUANTUM_NS) is None


def test_a_region_whose_sweep_passes_4096_states_goes_in_chunks(tmp_path, favour_dla, monkeypatch):
    """15 fanned-out Convs and their Concat: more than 14 DLA-capable groups, so the sweep is tried, and 2^15 states
    make it give up: the region goes in chunks of at most 14 DLA-capable groups."""
    lm = _model(_fan_out(tmp_path / "m.onnx", 15), "orin-agx", favour_dla)
    calls = _spy(monkeypatch)
    assert region_bound_ns(lm, PlanRequest(objective="throughput")) is not None
    assert calls["sweep"] == [False]
    assert len(calls["advance"]) == 2
