"""The CP-SAT planner: optimal against brute force, and every hard constraint binding."""

from __future__ import annotations

import itertools
import math

import pytest

import optimizer.solver._cpsat as cpsat
from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.errors import BadInputError, InfeasibleError
from optimizer.fusion import build_groups
from optimizer.ir import load_model
from optimizer.latency import LatencyModel, Option, Placement, evaluate, group_options, load_profile
from optimizer.plan import optimize, validate_plan
from optimizer.solver import PlanRequest, loadable_limit
from tests.solver.conftest import add, build_model, chain, concat, conv, gpu_only

CATALOG = load_catalog()


def _model(path, target, profile=None):
    graph = load_model(path)
    report = check_graph(graph, CATALOG, target)
    groups = build_groups(report)
    tgt = CATALOG.target(target)
    return LatencyModel(groups, CATALOG, tgt, load_profile(tgt.family, profile), io=report.io)


def _convex_connected(lm, members: set[int]) -> bool:
    edges = {(e.src, e.dst) for e in lm.groups.edges if e.src >= 0}
    succ: dict[int, set[int]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
    outside_reach = set()
    stack = [b for a in members for b in succ.get(a, ()) if b not in members]
    while stack:
        g = stack.pop()
        if g not in outside_reach:
            outside_reach.add(g)
            stack.extend(succ.get(g, ()))
    if outside_reach & members:
        return False
    seen, stack = set(), [min(members)]
    while stack:
        g = stack.pop()
        if g in seen:
            continue
        seen.add(g)
        stack.extend(n for a, b in edges for n in ((b,) if a == g else (a,) if b == g else ()) if n in members)
    return seen == members


def _partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _partitions(rest):
        for i in range(len(part)):
            yield [*part[:i], [first, *part[i]], *part[i + 1:]]
        yield [[first], *part]


def brute_force(lm, objective: str, limit: int = 4, cores: int | None = None) -> int:
    """Enumerates every option, loadable partition and DLA core; the best valid plan's objective (`cores`:
    throughput plans whose loadables use exactly DLA0..DLA{cores-1}, math.inf when there is none)."""
    by_cores = brute_force_by_cores(lm, objective, limit)
    if cores is None:
        return min(by_cores.values(), default=math.inf)
    return by_cores.get(frozenset(range(cores)), math.inf)


def brute_force_by_cores(lm, objective: str, limit: int = 4) -> dict[frozenset[int], int]:
    """One enumeration for every core set: the best valid plan's objective keyed by the DLA cores its
    loadables use (the empty set: no loadable)."""
    allowed = frozenset({"int8", "fp16", "fp32"})
    options = [group_options(lm, g, allowed) for g in range(len(lm.groups.groups))]
    best: dict[frozenset[int], int] = {}
    for combo in itertools.product(*options):
        dla = [g for g, o in enumerate(combo) if o.device == "dla"]
        for part in _partitions(dla):
            if len(part) > limit or not all(_convex_connected(lm, set(block)) for block in part):
                continue
            cores_choices = ([(0,) * len(part)] if objective != "throughput"
                             else itertools.product((0, 1), repeat=len(part)))
            for on in cores_choices:
                label = {g: (k, on[k]) for k, block in enumerate(part) for g in block}
                placements = tuple(Placement(o, core=label.get(g, (0, 0))[1], loadable=label.get(g, (-1, 0))[0])
                                   for g, o in enumerate(combo))
                key = frozenset(on)
                score = _score(evaluate(lm, placements), objective)
                if score < best.get(key, math.inf):
                    best[key] = score
    return best


def _score(b, objective: str) -> int:
    if objective == "latency":
        return b.total_ns
    if objective == "dual-stream":
        return max(b.busy_ns.get("dla0", 0), 2 * b.busy_ns.get("gpu", 0))
    return max(b.busy_ns.values())


def _solve(path, target, profile=None, **request):
    return optimize(str(path), target, PlanRequest(**request), profile_path=profile)


def _objective(planned) -> int:
    return _score(planned.breakdown, planned.plan.objective)


TINY = {
    "branch": lambda p: build_model(p, [conv("A", "x", "a"), gpu_only("B", "a", "b"), conv("C", "a", "c"),
                                        add("D", "b", "c", "y")]),
    "chain": lambda p: chain(p, "CXC"),
    "diamond": lambda p: build_model(p, [conv("A", "x", "a"), conv("B", "a", "b"), gpu_only("C", "a", "c"),
                                         concat("D", "b", "c", "y")]),
}


@pytest.mark.parametrize("shape", sorted(TINY))
@pytest.mark.parametrize("objective", ["latency", "throughput", "dual-stream"])
@pytest.mark.parametrize("favour", [False, True])
def test_matches_brute_force_on_jetson(tmp_path, favour_dla, shape, objective, favour):
    path = TINY[shape](tmp_path / "m.onnx")
    profile = favour_dla if favour else None
    planned = _solve(path, "orin-agx", profile, objective=objective)
    assert planned.plan.solver.status == "OPTIMAL"
    assert _objective(planned) == brute_force(_model(path, "orin-agx", profile), objective)
    assert validate_plan(planned.plan, CATALOG, str(path)) == []


@pytest.mark.parametrize("target", ["rk3588", "rk3576"])
@pytest.mark.parametrize("objective", ["latency", "throughput"])
def test_matches_brute_force_on_rknn(tmp_path, target, objective):
    path = TINY["branch"](tmp_path / "m.onnx")
    planned = _solve(path, target, objective=objective)
    assert planned.plan.solver.status == "OPTIMAL"
    assert _objective(planned) == brute_force(_model(path, target), objective)


def test_solver_objective_equals_the_evaluator(tmp_path, favour_dla):
    path = chain(tmp_path / "m.onnx", "CXCXCC")
    planned = _solve(path, "orin-agx", favour_dla)
    assert planned.run["solver"]["objective_ns"] == planned.breakdown.total_ns


def _dla_subgraphs(planned):
    return [s for s in planned.plan.subgraphs if s.device.startswith("dla")]


def test_loadable_limit_binds(tmp_path, favour_dla):
    """Five DLA-friendly regions separated by GPU-only ops, limit four: one region must go to the GPU."""
    path = chain(tmp_path / "m.onnx", "CXCXCXCXC")
    free = _solve(path, "orin-agx", favour_dla, max_loadables=5)
    assert len(_dla_subgraphs(free)) == 5
    limited = _solve(path, "orin-agx", favour_dla)
    assert len(_dla_subgraphs(limited)) == 4
    assert validate_plan(limited.plan, CATALOG, str(path)) == []
    assert limited.breakdown.total_ns > free.breakdown.total_ns


def test_loadables_are_convex(tmp_path, favour_dla, monkeypatch):
    """A -> Exp(GPU) -> Add <- A: A and Add cannot share a loadable (the path leaves and re-enters)."""
    path = build_model(tmp_path / "m.onnx", [conv("A", "x", "a"), gpu_only("B", "a", "b"), add("C", "a", "b", "c"),
                                             conv("D", "c", "y")])
    planned = _solve(path, "orin-agx", favour_dla, max_loadables=1)
    assert validate_plan(planned.plan, CATALOG, str(path)) == []
    monkeypatch.setattr(cpsat.PlanModel, "_convexity", lambda self, parts: None)
    broken = _solve(path, "orin-agx", favour_dla, max_loadables=1)
    assert any("not convex" in p for p in validate_plan(broken.plan, CATALOG, str(path)))


def test_loadables_are_connected(tmp_path, favour_dla, monkeypatch):
    """Two parallel DLA branches between GPU-only ops: with one loadable they cannot both be on DLA."""
    path = build_model(tmp_path / "m.onnx", [gpu_only("S", "x", "s"), conv("A", "s", "a"), conv("B", "s", "b"),
                                             gpu_only("EA", "a", "ea"), gpu_only("EB", "b", "eb"),
                                             add("J", "ea", "eb", "y")])
    planned = _solve(path, "orin-agx", favour_dla, max_loadables=1)
    assert validate_plan(planned.plan, CATALOG, str(path)) == []
    assert len(_dla_subgraphs(planned)) == 1 and len(_dla_subgraphs(planned)[0].nodes) == 1
    monkeypatch.setattr(cpsat.PlanModel, "add_connectivity_cuts", lambda self, placements: 0)
    monkeypatch.setattr(cpsat.PlanModel, "_split", lambda self, placements: False)
    cut_only = _solve(path, "orin-agx", favour_dla, max_loadables=1)
    assert validate_plan(cut_only.plan, CATALOG, str(path)) == []  # one part per slot keeps A and B apart
    monkeypatch.setattr(cpsat.PlanModel, "_one_part_per_slot", lambda self, parts: None)
    broken = _solve(path, "orin-agx", favour_dla, max_loadables=1)
    assert any("not connected" in p for p in validate_plan(broken.plan, CATALOG, str(path)))


def test_int8_concat_inputs_share_a_scale(tmp_path, favour_dla, monkeypatch):
    """A concat on DLA in INT8 needs its inputs in INT8 (DLA-CONCAT-INT8-RANGE)."""
    path = build_model(tmp_path / "m.onnx", [conv("A", "x", "a"), conv("B", "x", "b"), concat("C", "a", "b", "c"),
                                             conv("D", "c", "y", channels=32)])
    pins = {"A": "fp16", "B": "int8", "D": "int8"}
    planned = _solve(path, "orin-agx", favour_dla, precision_pins=pins)
    layers = {layer.node: layer for layer in planned.plan.layers}
    assert not (layers["C"].device.startswith("dla") and layers["C"].precision == "int8")
    monkeypatch.setattr(cpsat.PlanModel, "_int8_scale_ties", lambda self: None)
    loose = _solve(path, "orin-agx", favour_dla, precision_pins=pins)
    layers = {layer.node: layer for layer in loose.plan.layers}
    assert layers["C"].device.startswith("dla") and layers["C"].precision == "int8"


@pytest.mark.parametrize("pool", ["GlobalAveragePool", "GlobalMaxPool", "MaxPool"])
def test_int8_pooling_input_shares_a_scale(tmp_path, favour_dla, monkeypatch, pool):
    """DLA-POOL-INT8-SCALE counts global poolings like any pooling: on DLA in INT8 the input is INT8 too."""
    from onnx import helper

    from tests.conftest import save_model, value, weight
    window = {"kernel_shape": [2, 2], "strides": [2, 2]} if pool == "MaxPool" else {}
    nodes = [helper.make_node("Conv", ["x", "wa"], ["a"], name="A", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node(pool, ["a"], ["p"], name="P", **window),
             helper.make_node("Conv", ["p", "wd"], ["y"], name="D", kernel_shape=[1, 1])]
    path = save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 16, 8, 8])], [value("y", None)],
                      [weight("wa", [16, 16, 3, 3]), weight("wd", [16, 16, 1, 1])])
    on_dla = {"P": "dla"}
    with pytest.raises(InfeasibleError, match="DLA-POOL-INT8-SCALE"):
        _solve(path, "orin-agx", favour_dla, pins=on_dla, precision_pins={"A": "fp16", "P": "int8"})
    tied = _solve(path, "orin-agx", favour_dla, pins=on_dla, precision_pins={"A": "int8", "P": "int8"})
    assert {la.node: la.precision for la in tied.plan.layers}["P"] == "int8"
    monkeypatch.setattr(cpsat.PlanModel, "_int8_scale_ties", lambda self: None)
    loose = _solve(path, "orin-agx", favour_dla, pins=on_dla, precision_pins={"A": "fp16", "P": "int8"})
    assert {la.node: la.device for la in loose.plan.layers}["P"] == "dla0"


def test_pins_are_respected(tmp_path, favour_dla):
    path = chain(tmp_path / "m.onnx", "CCC")
    planned = _solve(path, "orin-agx", favour_dla, pins={"C1": "gpu"}, precision_pins={"C2": "fp16"})
    layers = {layer.node: layer for layer in planned.plan.layers}
    assert layers["C1"].device == "gpu" and layers["C0"].device == "dla0"
    assert layers["C2"].precision == "fp16"
    dla1 = _solve(path, "orin-agx", favour_dla, pins={"C0": "dla1"})
    assert {layer.node: layer.device for layer in dla1.plan.layers}["C0"] == "dla1"


def test_pin_against_a_rule_names_the_rule(tmp_path):
    path = chain(tmp_path / "m.onnx", "CXC")
    with pytest.raises(InfeasibleError, match="DLA-UNARY-ABS") as info:
        _solve(path, "orin-agx", pins={"X1": "dla"})
    assert info.value.exit_code == 1


def test_unknown_pin_node_is_bad_input(tmp_path):
    with pytest.raises(BadInputError, match="not a node"):
        _solve(chain(tmp_path / "m.onnx", "CC"), "orin-agx", pins={"nope": "gpu"})


def test_allow_precisions(tmp_path):
    path = chain(tmp_path / "m.onnx", "CXC")
    planned = _solve(path, "orin-agx", allowed_precisions=frozenset({"fp16"}))
    assert {layer.precision for layer in planned.plan.layers} == {"fp16"}
    rk = _solve(path, "rk3588", allowed_precisions=frozenset({"fp16"}))
    assert {(layer.device, layer.precision) for layer in rk.plan.layers} <= {("npu", "fp16"), ("cpu", "fp32")}


def test_int8_budget(tmp_path):
    from onnx import helper

    from tests.conftest import save_model, value, weight
    nodes = [helper.make_node("Conv", [f"t{i}" if i else "x", f"w{i}"], [f"t{i + 1}" if i < 3 else "y"], name=f"C{i}",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]) for i in range(4)]
    path = save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 256, 64, 64])], [value("y", None)],
                      [weight(f"w{i}", [256, 256, 3, 3]) for i in range(4)])
    sensitivity = {"C0": 0.5, "C1": 0.01, "C2": 0.01, "C3": 0.5}
    planned = _solve(path, "orin-agx", sensitivity=sensitivity, int8_budget=0.1)
    int8 = {layer.node for layer in planned.plan.layers if layer.precision == "int8"}
    assert sum(sensitivity[n] for n in int8) <= 0.1
    assert {"C1", "C2"} <= int8 and not {"C0", "C3"} & int8


def test_conflicting_requests_name_the_conflict(tmp_path):
    path = chain(tmp_path / "m.onnx", "CC")
    with pytest.raises(InfeasibleError) as info:
        _solve(path, "orin-agx", precision_pins={"C0": "int8"}, sensitivity={"C0": 1.0}, int8_budget=0.5)
    assert "--int8-budget" in info.value.message and "--precision C0=int8" in info.value.message


def test_standalone_refuses_gpu_layers_naming_them(tmp_path):
    with pytest.raises(InfeasibleError, match=r"X1 \(DLA-UNARY-ABS\)"):
        _solve(chain(tmp_path / "m.onnx", "CXC"), "orin-agx", dla_standalone=True)


def test_standalone_puts_everything_on_dla(tmp_path):
    planned = _solve(chain(tmp_path / "s.onnx", "CCC"), "orin-agx", dla_standalone=True)
    assert {s.device for s in planned.plan.subgraphs} == {"dla0"}
    standalone = {"linear", "chw4", "chw16", "chw32"}  # DLA-STANDALONE-IO: no kDLA_* formats, no reformat
    assert {f for s in planned.plan.subgraphs for f in s.io_formats.values()} <= standalone


def test_throughput_uses_both_dla_cores(tmp_path, favour_dla):
    from onnx import helper

    from tests.conftest import save_model, value, weight
    nodes = [helper.make_node("Exp", ["x"], ["s"], name="S"),
             helper.make_node("Conv", ["s", "wa"], ["a"], name="A", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["s", "wb"], ["b"], name="B", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["a", "b"], ["y"], name="J")]
    path = save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 512, 64, 64])], [value("y", None)],
                      [weight("wa", [512, 512, 3, 3]), weight("wb", [512, 512, 3, 3])])
    planned = _solve(path, "orin-agx", favour_dla, objective="throughput")
    assert {"dla0", "dla1"} <= {layer.device for layer in planned.plan.layers}


def test_dual_stream_balances_dla_and_gpu(tmp_path, favour_dla):
    planned = _solve(chain(tmp_path / "m.onnx", "CXC"), "orin-agx", favour_dla, objective="dual-stream")
    busy = planned.breakdown.busy_ns
    assert planned.plan.predicted.throughput_fps == pytest.approx(
        2e9 / max(busy.get("dla0", 0), 2 * busy.get("gpu", 0)), rel=1e-3)
    with pytest.raises(BadInputError, match="dual-stream"):
        _solve(chain(tmp_path / "n.onnx", "CC"), "rk3588", objective="dual-stream")


def test_rknn_multicore_and_sparsity(tmp_path):
    path = chain(tmp_path / "m.onnx", "CCC")
    planned = _solve(path, "rk3576")
    convs = [layer for layer in planned.plan.layers if layer.op_type == "Conv"]
    assert all(layer.device == "npu" for layer in convs)
    off = _solve(path, "rk3576", sparsity="off")
    assert all(layer.sparsity == "dense" for layer in off.plan.layers)
    assert validate_plan(planned.plan, CATALOG, str(path)) == []


def test_latency_cap_for_throughput(tmp_path, favour_dla):
    path = chain(tmp_path / "m.onnx", "CXCXC")
    free = _solve(path, "orin-agx", favour_dla, objective="throughput")
    cap = free.plan.predicted.latency_ms * 0.999
    with pytest.raises(InfeasibleError, match="--latency-cap"):
        _solve(path, "orin-agx", favour_dla, objective="throughput", latency_cap_ms=cap * 0.01)
    capped = _solve(path, "orin-agx", favour_dla, objective="throughput", latency_cap_ms=cap * 10)
    assert capped.plan.predicted.latency_ms <= cap * 10


def _long_chain(tmp_path, n: int = 400):
    from onnx import helper

    from tests.conftest import save_model, value, weight
    nodes, src = [], "x"
    for i in range(n):
        dst = "y" if i == n - 1 else f"t{i}"
        nodes.append(helper.make_node("Conv" if i % 2 == 0 else "Exp", [src, "w"] if i % 2 == 0 else [src], [dst],
                                      name=f"n{i}", **({"kernel_shape": [1, 1]} if i % 2 == 0 else {})))
        src = dst
    return save_model(tmp_path / "long.onnx", nodes, [value("x", [1, 8, 8, 8])], [value("y", None)],
                      [weight("w", [8, 8, 1, 1])])


def test_the_cheapest_option_bound_proves_a_baseline_without_a_model(tmp_path):
    """All-GPU is every group's cheapest option and moves nothing: the bound proves it before any model."""
    path = _long_chain(tmp_path)
    planned = optimize(str(path), "orin-agx", PlanRequest(time_limit_s=0.01))
    solver = planned.plan.solver
    assert (solver.status, solver.gap) == ("OPTIMAL", 0.0) and solver.bound_ms == solver.objective_ms
    assert planned.run["solver"]["variables"] == 0
    assert validate_plan(planned.plan, CATALOG, str(path)) == []


def test_no_plan_in_time_hands_over_the_best_baseline_with_a_real_gap(tmp_path, favour_dla):
    """A graph too large for the time limit still gets a valid plan (the best baseline); its gap is measured
    against the lower bound (cheapest options raised by the LP relaxation), not declared 100%."""
    from optimizer.solver import cheapest_bound_ns, lower_bound_ns

    path = _long_chain(tmp_path)
    planned = optimize(str(path), "orin-agx", PlanRequest(time_limit_s=0.01), profile_path=favour_dla)
    solver = planned.plan.solver  # deterministic time limits: the same outcome on any machine
    assert solver.status == "FEASIBLE" and 0.0 < solver.gap < 1.0
    assert solver.bound_ms == round(lower_bound_ns(planned.model, PlanRequest()) / 1e6, 6)
    assert lower_bound_ns(planned.model, PlanRequest()) > cheapest_bound_ns(planned.model, PlanRequest())
    assert validate_plan(planned.plan, CATALOG, str(path)) == []
    with pytest.raises(InfeasibleError, match="time-limit"):
        optimize(str(path), "orin-agx", PlanRequest(time_limit_s=0.01, pins={"n0": "dla"}),
                 profile_path=favour_dla)


@pytest.mark.parametrize("objective", ["latency", "throughput", "dual-stream"])
def test_symmetry_breaking_keeps_the_brute_force_optimum_and_numbers_slots_canonically(tmp_path, favour_dla,
                                                                                        objective):
    """Slots numbered by their first member, slot 0 on DLA0 for throughput: one copy of every plan survives."""
    path = chain(tmp_path / "m.onnx", "CXCXCXC")
    planned = _solve(path, "orin-agx", favour_dla, objective=objective)
    assert planned.plan.solver.status == "OPTIMAL"
    limit = loadable_limit(PlanRequest(objective=objective), 4)  # dual-stream: 2 per stream, 4 at once
    assert _objective(planned) == brute_force(_model(path, "orin-agx", favour_dla), objective, limit)
    slots = sorted({p.loadable for p in planned.placements if p.loadable >= 0})
    firsts = [min(g for g, p in enumerate(planned.placements) if p.loadable == s) for s in slots]
    assert slots == list(range(len(slots))) and firsts == sorted(firsts)
    if slots:
        assert next(p.core for p in planned.placements if p.loadable == 0) == 0


def test_a_hint_in_another_labelling_is_relabelled_to_the_canonical_one(tmp_path, favour_dla):
    from optimizer.solver import PlanModel

    path = chain(tmp_path / "m.onnx", "CXCXC")
    lm = _model(path, "orin-agx", favour_dla)
    report = check_graph(lm.graph, CATALOG, "orin-agx")
    model = PlanModel(lm, report, CATALOG, PlanRequest(objective="throughput"))
    dla = Option("dla", "int8")
    gpu = Option("gpu", "int8")
    hint = (Placement(dla, 1, 2), Placement(gpu), Placement(dla, 0, 0), Placement(gpu), Placement(dla, 1, 1))
    assert model.canonical(hint) == (Placement(dla, 0, 0), Placement(gpu), Placement(dla, 1, 1), Placement(gpu),
                                     Placement(dla, 0, 2))


@pytest.mark.parametrize("breaking", ["none", "slots", "slots+cores"])
@pytest.mark.parametrize("shape", ["CCXCC", "CXCXCXC"])
def test_each_symmetry_breaking_constraint_keeps_the_brute_force_optimum(tmp_path, favour_dla, monkeypatch,
                                                                          breaking, shape):
    """Throughput, where both the slot labels and the two DLA cores are interchangeable: the slot order by
    first member alone, and with slot 0 on DLA0, each prove the brute-force optimum (as the model without
    either does): each removes copies of plans, never the optimum."""
    from optimizer.solver import PlanModel

    if breaking == "none":
        monkeypatch.setattr(PlanModel, "interchangeable_slots", lambda self: False)
    if breaking != "slots+cores":
        monkeypatch.setattr(PlanModel, "interchangeable_cores", lambda self: False)
    path = chain(tmp_path / "m.onnx", shape)
    planned = _solve(path, "orin-agx", favour_dla, objective="throughput")
    assert planned.plan.solver.status == "OPTIMAL"
    assert _objective(planned) == brute_force(_model(path, "orin-agx", favour_dla), "throughput")
    assert validate_plan(planned.plan, CATALOG, str(path)) == []
